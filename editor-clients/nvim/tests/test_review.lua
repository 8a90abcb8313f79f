-- The review engine alone, on proposals written here in the protocol's
-- shape (a WorkspaceEdit with a versioned TextDocumentEdit): hunks, per-hunk
-- accept and reject, one undo step, both diff styles and the stale-buffer
-- conflict. No server is involved; test_intent.lua covers the same with one.
local h = _G.h

local function proposal(buf, edits, extra)
  return vim.tbl_extend('force', {
    proposalId = 'p1', language = 'python', verdict = 'allow', diagnostics = {},
    edit = { documentChanges = { {
      textDocument = { uri = vim.uri_from_bufnr(buf), version = vim.b[buf].changedtick },
      edits = edits,
    } } },
  }, extra or {})
end

local function range(l1, c1, l2, c2)
  return { start = { line = l1, character = c1 }, ['end'] = { line = l2, character = c2 } }
end

local function review(buf, p)
  h.setup()
  local intent = require('kiln.intent')
  return intent.start_review(buf, p, h.lines(buf), vim.b[buf].changedtick)
end

return {
  { 'review: an insertion is one hunk, drawn inline, written on accept', function()
    local buf = h.buffer({ 'a = 1', 'b = 2' })
    local rv = review(buf, proposal(buf, { { range = range(1, 0, 1, 0), newText = 'print(a)\n' } }))
    h.eq(1, #rv.hunks, 'hunks')
    local marks = vim.api.nvim_buf_get_extmarks(buf, vim.api.nvim_create_namespace('kiln.review'), 0, -1,
      { details = true })
    h.ok(#marks > 0 and marks[1][4].virt_lines, 'virtual lines show the proposal')
    h.eq({ 'a = 1', 'b = 2' }, h.lines(buf), 'nothing written yet')
    h.ok(require('kiln').accept(), 'accepted')
    h.eq({ 'a = 1', 'print(a)', 'b = 2' }, h.lines(buf), 'written')
    vim.cmd('silent undo')
    h.eq({ 'a = 1', 'b = 2' }, h.lines(buf), 'undone')
  end },

  { 'review: per-hunk accept and reject, one undo step', function()
    local lines = {}
    for i = 1, 20 do
      lines[i] = 'line' .. i
    end
    local buf = h.buffer(lines)
    local rv = review(buf, proposal(buf, {
      { range = range(2, 0, 3, 0), newText = 'THREE\n' },
      { range = range(9, 0, 10, 0), newText = 'TEN\nTEN.5\n' },
      { range = range(15, 0, 16, 0), newText = '' },
    }))
    h.eq(3, #rv.hunks, 'hunks')
    local intent = require('kiln.intent')
    h.ok(intent.accept(buf, 3), 'accept 3')
    h.ok(intent.reject(buf, 1), 'reject 1')
    vim.api.nvim_win_set_cursor(0, { 10, 0 })
    h.ok(intent.accept(buf), 'accept the hunk under the cursor (2)')
    local want = vim.deepcopy(lines)
    table.remove(want, 16)
    want[10] = 'TEN'
    table.insert(want, 11, 'TEN.5')
    h.eq(want, h.lines(buf), 'hunks 2 and 3 written, 1 not')
    h.eq(nil, intent.review(buf), 'review over')
    vim.cmd('silent undo')
    h.eq(lines, h.lines(buf), 'one undo step')
  end },

  { 'review: split style shows the proposal side by side', function()
    local buf = h.buffer({ 'a', 'b', 'c' })
    h.setup({ diff_style = 'split' })
    local intent = require('kiln.intent')
    local rv = intent.start_review(buf, proposal(buf, { { range = range(1, 0, 2, 0), newText = 'B\n' } }),
      h.lines(buf), vim.b[buf].changedtick)
    h.eq({ 'a', 'B', 'c' }, vim.api.nvim_buf_get_lines(rv.pbuf, 0, -1, false), 'proposal buffer')
    h.eq(2, #vim.api.nvim_list_wins(), 'two windows')
    h.ok(intent.accept_all(buf), 'accept all')
    h.eq({ 'a', 'B', 'c' }, h.lines(buf), 'written')
    h.eq(1, #vim.api.nvim_list_wins(), 'the proposal window closed')
  end },

  { 'review: a hunk whose lines changed after the request is not overwritten', function()
    local buf = h.buffer({ 'a', 'b' })
    review(buf, proposal(buf, { { range = range(0, 0, 1, 0), newText = 'A\n' } }))
    vim.api.nvim_buf_set_lines(buf, 0, 1, false, { 'mine' })
    h.eq(false, require('kiln.intent').accept_all(buf), 'refused')
    h.eq({ 'mine', 'b' }, h.lines(buf), 'kept')
    h.ok(h.message('changed since the proposal'), 'reported')
  end },

  { 'review: a reloaded buffer is not overwritten', function()
    local path = vim.fn.tempname() .. '.py'
    vim.fn.writefile({ 'a', 'b' }, path)
    vim.cmd('silent edit ' .. vim.fn.fnameescape(path))
    local buf = vim.api.nvim_get_current_buf()
    review(buf, proposal(buf, { { range = range(0, 0, 1, 0), newText = 'A\n' } }))
    vim.fn.writefile({ 'a2', 'b' }, path)
    vim.cmd('silent edit!')
    require('kiln.intent').accept_all(buf)
    h.eq({ 'a2', 'b' }, h.lines(buf), 'nothing written')
    vim.fn.delete(path)
  end },

  { 'review: proposal diagnostics go through vim.diagnostic', function()
    local buf = h.buffer({ 'x = 1' })
    h.setup({ diff_style = 'split' })
    local p = proposal(buf, { { range = range(1, 0, 1, 0), newText = 'import socket\nprint(1)\n' } }, {
      verdict = 'deny',
      diagnostics = { { range = range(0, 0, 0, 13), severity = 1, message = 'network access', source = 'kiln' } },
    })
    local rv = require('kiln.intent').start_review(buf, p, h.lines(buf), vim.b[buf].changedtick)
    local ds = vim.diagnostic.get(rv.pbuf)
    h.eq(1, #ds, 'one diagnostic')
    h.eq(1, ds[1].lnum, 'on the proposed line (row 1 of the proposal)')
    vim.cmd('KilnRun')
    h.ok(h.message('denied'), 'a denied proposal is not run')
  end },

  { 'review: UTF-16 columns (a server that picked utf-16) land on the right bytes', function()
    local buf = h.buffer({ 's = "é😀" + "old"', 'z = 1' })
    h.setup()
    local client = require('kiln.client')
    client.state.init_result = { capabilities = { positionEncoding = 'utf-16' } }
    -- "old" (quoted) starts at UTF-16 column 12 (é is 1 unit, 😀 is 2), byte 15.
    local p = proposal(buf, { { range = range(0, 12, 0, 17), newText = '"new"' } })
    local rv = require('kiln.intent').start_review(buf, p, h.lines(buf), vim.b[buf].changedtick)
    client.state.init_result = nil
    h.eq({ 's = "é😀" + "new"' }, rv.hunks[1].lines, 'the proposed line')
    h.eq(14, require("kiln.doc").to_server_col(buf, 0, 17), 'byte 17 is UTF-16 column 14')
  end },

  { 'review: a hunk whose lines were deleted stays marked, in both styles', function()
    for _, style in ipairs({ 'inline', 'split' }) do
      local buf = h.buffer({ 'a', 'b', 'c', 'd', 'e' })
      h.setup({ diff_style = style })
      local intent = require('kiln.intent')
      local rv = intent.start_review(buf, proposal(buf, {
        { range = range(0, 0, 1, 0), newText = 'A\n' },
        { range = range(4, 0, 5, 0), newText = 'E\n' },
      }), h.lines(buf), vim.b[buf].changedtick)
      h.eq(2, #rv.hunks, style .. ': two hunks')
      vim.api.nvim_buf_set_lines(buf, 2, 5, false, {})
      vim.wait(50, function() return false end)
      h.eq('edited', rv.hunks[2].stale, style .. ': hunk 2 is stale')
      h.eq(nil, rv.hunks[1].stale, style .. ': hunk 1 is not')
      h.eq(true, intent.accept_all(buf), style .. ': hunk 1 written')
      h.eq({ 'A', 'b' }, h.lines(buf), style .. ': only hunk 1')
      h.ok(intent.review(buf), style .. ': hunk 2 still shown')
      h.eq(true, intent.reject_all(buf), style .. ': rejected')
      h.eq(nil, intent.review(buf), style .. ': the review ended')
      for _, m in ipairs(h.messages) do
        h.ok(m.level ~= vim.log.levels.ERROR, style .. ': no error: ' .. tostring(m.msg))
      end
    end
  end },
}

-- :KilnIntent, the streamed preview, the review of the proposal (per-hunk
-- accept and reject, one undo step, stale-buffer conflict), a denied
-- proposal and repair attempts, against the real server and the fake model
-- server of tests/fake-model.
local h = _G.h

local function intent(opts)
  local done
  opts.on_done = function(err, rv) done = { err = err, rv = rv } end
  require('kiln').intent(opts)
  h.wait(30000, function() return done ~= nil end, 'the proposal')
  h.eq(nil, done.err, 'intent error')
  h.ok(done.rv, 'a review')
  return done.rv
end

-- The fake's failing program (fake-repair) accepted into an empty buffer
-- and run with opts (repair_attempts, auto_repair): waits for the run and
-- its repair to end; returns the buffer.
local function repair_run(opts)
  h.setup_model('fake-repair', opts)
  h.need('intent/approve')
  local buf = h.buffer({ '' })
  intent({ text = 'sum 0..2' })
  require('kiln.intent').accept_all(buf)
  vim.cmd('KilnRun')
  h.wait_run()
  return buf
end

return {
  { 'intent: code streams into the preview, then a reviewable proposal', function()
    h.setup_model('fake-slow')
    local buf = h.buffer({ 'x = 1', 'y = 2' })
    vim.api.nvim_win_set_cursor(0, { 1, 0 })
    local intent_mod = require('kiln.intent')
    local seen_preview, seen_status = false, {}
    local done
    -- No text: the intent is asked for.
    local ui_input = vim.ui.input
    vim.ui.input = function(o, cb)
      seen_status.prompt = o.prompt
      cb('print a greeting')
    end
    vim.cmd('KilnIntent')
    vim.ui.input = ui_input
    h.eq('kiln intent: ', seen_status.prompt, 'the prompt')
    local intent_req = intent_mod.pending[buf]
    h.ok(intent_req, 'the intent was sent')
    local on_done = intent_req.done
    intent_req.done = function(err, rv)
      on_done(err, rv)
      done = { err, intent_mod.review(buf) }
    end
    h.wait(30000, function()
      if #intent_mod.preview_lines() > 0 and intent_mod.preview_lines()[1]:find('print', 1, true) then
        seen_preview = seen_preview or done == nil
      end
      local st = require('kiln').status()
      if st ~= '' then
        seen_status[st] = true
      end
      return done ~= nil
    end, 'the proposal')
    h.ok(seen_preview, 'the code showed in the preview before the proposal')
    h.ok(seen_status['kiln: writing'], 'LSP progress reached the status line: ' .. vim.inspect(seen_status))
    h.eq(nil, done[1], 'intent error')
    h.eq({ 'x = 1', 'y = 2' }, h.lines(buf), 'nothing written before review')
    local rv = done[2]
    h.eq(1, #rv.hunks, 'hunks')
    h.eq({ "print('hello from kiln')" }, rv.hunks[1].lines, 'the proposed line')
    h.ok(#vim.api.nvim_buf_get_extmarks(buf, vim.api.nvim_create_namespace('kiln.review'), 0, -1, {}) > 0,
      'the inline diff is drawn')
    require('kiln').accept_all()
    h.eq({ 'x = 1', "print('hello from kiln')", 'y = 2' }, h.lines(buf), 'accepted below the cursor')
  end },

  { 'intent: per-hunk accept and reject, and one undo restores the buffer', function()
    h.setup_model('fake-long')
    local want = h.long_program()
    local mine = vim.deepcopy(want)
    mine[6] = '    n = 0  # mine'
    mine[#mine] = "    print('mine')"
    local buf = h.buffer(mine)
    local rv = intent({ text = 'compute stats', line1 = 1, line2 = #mine })
    h.eq(2, #rv.hunks, 'two hunks')
    local intent_mod = require('kiln.intent')
    h.ok(intent_mod.accept(buf, 1), 'accept hunk 1')
    local after = h.lines(buf)
    h.eq(want[6], after[6], 'hunk 1 written')
    h.eq("    print('mine')", after[#after], 'hunk 2 not yet')
    h.ok(intent_mod.reject(buf, 2), 'reject hunk 2')
    after = h.lines(buf)
    local expect = vim.deepcopy(want)
    expect[#expect] = "    print('mine')"
    for i = 1, math.max(#expect, #after) do
      h.eq(expect[i], after[i], 'line ' .. i)
    end
    h.eq(nil, intent_mod.review(buf), 'the review ended')
    vim.cmd('silent undo')
    h.eq(mine, h.lines(buf), 'one undo restores the buffer')
  end },

  { 'intent: accept-all of several hunks is one undo step (split diff)', function()
    h.setup_model('fake-long', { diff_style = 'split' })
    local want = h.long_program()
    local mine = vim.deepcopy(want)
    mine[2] = '# one'
    mine[12] = '# two'
    mine[#mine] = '# three'
    local buf = h.buffer(mine)
    local rv = intent({ text = 'compute stats', line1 = 1, line2 = #mine })
    h.eq(3, #rv.hunks, 'three hunks')
    h.ok(rv.pbuf and vim.api.nvim_buf_is_valid(rv.pbuf), 'the proposal buffer')
    h.eq(want, vim.api.nvim_buf_get_lines(rv.pbuf, 0, -1, false), 'the proposal shows the proposed text')
    h.ok(vim.wo[vim.fn.bufwinid(buf)].diff, 'the buffer is in diff mode')
    require('kiln.intent').accept_all(buf)
    h.eq(want, h.lines(buf), 'all hunks written')
    h.ok(not vim.wo[vim.fn.bufwinid(buf)].diff, 'diff mode ended')
    vim.cmd('silent undo')
    h.eq(mine, h.lines(buf), 'one undo restores the buffer')
  end },

  { 'intent: reject leaves the buffer as it was', function()
    h.setup_model('fake-coder')
    local buf = h.buffer({ 'a = 1' })
    intent({ text = 'greet' })
    require('kiln.intent').reject_all(buf)
    h.eq({ 'a = 1' }, h.lines(buf), 'unchanged')
    h.eq(0, #vim.api.nvim_buf_get_extmarks(buf, vim.api.nvim_create_namespace('kiln.review'), 0, -1, {}),
      'the inline diff is gone')
    h.eq(nil, require('kiln.intent').runnable(buf), 'a rejected proposal is not what :KilnRun runs')
  end },

  { 'intent: a buffer changed since the request is never overwritten', function()
    h.setup_model('fake-coder')
    local buf = h.buffer({ 'a = 1', 'b = 2' })
    intent({ text = 'greet' })
    -- The change spans the place the proposal goes (below line 1).
    vim.api.nvim_buf_set_lines(buf, 0, 2, false, { 'a = 100' })
    h.eq(false, require('kiln.intent').accept_all(buf), 'accept refused')
    h.eq({ 'a = 100' }, h.lines(buf), 'the buffer keeps the change')
    h.ok(h.message('changed since the proposal'), 'the conflict is reported')
  end },

  { 'intent: the server refuses to run a proposal whose buffer changed', function()
    h.setup_model('fake-coder')
    h.need('intent/approve')
    local buf = h.buffer({ 'a = 1' })
    intent({ text = 'greet' })
    -- Still under review, the user edits the buffer, then asks to run.
    vim.api.nvim_buf_set_lines(buf, 0, 1, false, { 'a = 2' })
    vim.cmd('KilnRun')
    local run = require('kiln.run')
    h.wait(10000, function() return run.current == nil end, 'the answer')
    h.ok(run.last.error and tostring(run.last.error.message):find('changed since', 1, true),
      'the conflict: ' .. vim.inspect(run.last))
    local text = table.concat(require('kiln.output').lines(), '\n')
    h.ok(not text:find('hello from kiln', 1, true), 'nothing ran:\n' .. text)
  end },

  { 'intent: after a run the model explains the result (explain = true)', function()
    h.setup_model('fake-coder', { explain = true })
    h.need('intent/approve')
    local buf = h.buffer({ '' })
    intent({ text = 'greet' })
    require('kiln.intent').accept_all(buf)
    vim.cmd('KilnRun')
    local run = require('kiln.run')
    h.wait(30000, function() return run.current == nil end, 'the run')
    local text = table.concat(require('kiln.output').lines(), '\n')
    h.ok(text:find('hello from kiln', 1, true), 'the program ran:\n' .. text)
    h.ok(text:find('\nIt added the numbers and printed the total.\n', 1, true), 'the explanation:\n' .. text)
  end },

  { 'intent: a denied proposal cannot be run', function()
    h.setup_model('fake-deny')
    local buf = h.buffer({ '' })
    local rv = intent({ text = 'fetch a page' })
    h.eq('deny', rv.proposal.verdict, 'verdict')
    local ds = vim.diagnostic.get(buf, { namespace = vim.api.nvim_create_namespace('kiln.proposal') })
    h.ok(#ds > 0, 'the validator diagnostics are shown on the proposal')
    vim.cmd('KilnRun')
    h.eq(nil, require('kiln.run').current, 'nothing runs')
    h.ok(h.message('denied'), 'the refusal is reported')
  end },

  { 'intent: a repaired proposal waits for approval; the next :KilnRun runs it', function()
    local buf = repair_run({ repair_attempts = 3 })
    local run = require('kiln.run')
    local out = require('kiln.output').section_lines()
    local text = table.concat(out, '\n')
    h.ok(text:find('attempt 2 repaired (verdict allow)', 1, true), 'the repair is shown:\n' .. text)
    h.ok(text:find('the repaired code p2 did not run: it needs your approval', 1, true),
      'the repair waits:\n' .. text)
    h.ok(not vim.tbl_contains(out, '3') and not text:find('attempt 2 running', 1, true),
      'the repaired code did not run:\n' .. text)
    local rv = require('kiln.intent').review(buf)
    h.ok(rv and rv.proposal.proposalId == 'p2', 'the review shows the repaired proposal')
    -- Approving it is the next :KilnRun.
    vim.cmd('KilnRun')
    h.wait(60000, function() return run.current == nil end, 'the approved repair')
    out = require('kiln.output').section_lines()
    h.ok(out[1]:find('proposal p2', 1, true), 'what runs: ' .. tostring(out[1]))
    h.ok(vim.tbl_contains(out, '3'), 'p2 ran:\n' .. table.concat(out, '\n'))
  end },

  { 'intent: with auto_repair, an allowed repair runs in the same run; attempts are shown', function()
    repair_run({ repair_attempts = 3, auto_repair = true })
    local text = table.concat(require('kiln.output').lines(), '\n')
    h.ok(text:find('attempt 1 ran: it exited with status 1', 1, true), 'the failed attempt:\n' .. text)
    h.ok(text:find('attempt 2 repaired (verdict allow)', 1, true), 'the repair:\n' .. text)
    h.ok(text:find('  | print(total)', 1, true), 'the repaired code:\n' .. text)
    h.ok(text:find('\n3\n', 1, true) or text:find('\n3$'), 'the repaired program printed 3:\n' .. text)
  end },

  { 'intent: :KilnCancel stops an intent while the model writes', function()
    h.setup_model('fake-slow')
    local buf = h.buffer({ 'x = 1' })
    local intent_mod = require('kiln.intent')
    local called = false
    require('kiln').intent({ text = 'greet', on_done = function() called = true end })
    h.wait(20000, function() return #intent_mod.preview_lines() > 0 and intent_mod.preview_lines()[1] ~= '' end,
      'the first code in the preview')
    vim.cmd('KilnCancel')
    h.eq(nil, intent_mod.pending[buf], 'nothing pending')
    h.ok(h.message('intent cancelled'), 'reported')
    -- The server stops too: a new intent for the buffer goes through.
    vim.wait(500, function() return false end)
    h.eq(nil, intent_mod.review(buf), 'no review from the cancelled intent')
    h.eq({ 'x = 1' }, h.lines(buf), 'buffer untouched')
    h.ok(not called, 'the cancelled request did not finish')
  end },

  { 'intent: a model failure is explained and changes nothing', function()
    h.setup_model('fake-500')
    local buf = h.buffer({ 'x = 1' })
    local done
    require('kiln').intent({ text = 'greet', on_done = function(err, rv) done = { err = err, rv = rv } end })
    h.wait(30000, function() return done ~= nil end, 'the answer')
    h.ok(done.err and done.rv == nil, 'an error, no review: ' .. vim.inspect(done))
    h.ok(h.message('^kiln: intent: '), 'reported: ' .. vim.inspect(h.messages))
    h.eq('', require('kiln').status(), 'the status line is idle again')
    h.eq({ 'x = 1' }, h.lines(buf), 'buffer untouched')
  end },
}

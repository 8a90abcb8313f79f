-- kiln.intent: :KilnIntent and the review of its proposal. The intent goes
-- to the server with the buffer's text, version and selection; the code
-- streams into a preview window while the model writes; the proposal comes
-- back as hunks shown inline (or in a side-by-side diff) with the
-- validator's diagnostics, to be accepted or rejected one by one. Accepted
-- hunks of one proposal form one undo step, and a buffer that changed since
-- the request (or since the last accepted hunk) is never written.
local client = require('kiln.client')
local compat = require('kiln.compat')
local config = require('kiln.config')
local doc = require('kiln.doc')
local edit = require('kiln.edit')
local scratch = require('kiln.scratch')
local validate = require('kiln.validate')

local M = {}

local ns = vim.api.nvim_create_namespace('kiln.review')
local diag_ns = vim.api.nvim_create_namespace('kiln.proposal')

-- Requests in flight by buffer: { rid, tick, snapshot, code }.
M.pending = {}
-- Reviews by buffer (see start_review), and each buffer's last proposal
-- (what :KilnRun approves) as { proposal, tick }.
M.reviews = {}
M.proposals = {}
-- One conversation per Neovim instance, so follow-up intents have context.
M.session_id = ('nvim-%d-%d'):format(vim.fn.getpid(), os.time())

-- --- the streamed preview -------------------------------------------------

local preview_buf = nil

local function preview_window(create)
  if not (preview_buf and vim.api.nvim_buf_is_valid(preview_buf)) then
    if not create then
      return nil
    end
    preview_buf = scratch.buf('kiln://preview')
  end
  local found = scratch.win(preview_buf)
  if found or not create then
    return found
  end
  local cur = vim.api.nvim_get_current_win()
  vim.cmd('belowright 10split')
  local w = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(w, preview_buf)
  vim.api.nvim_set_current_win(cur)
  return w
end

function M.preview_lines()
  if not (preview_buf and vim.api.nvim_buf_is_valid(preview_buf)) then
    return {}
  end
  return vim.api.nvim_buf_get_lines(preview_buf, 0, -1, false)
end

local function preview_set(code, language)
  preview_window(true)
  vim.bo[preview_buf].modifiable = true
  vim.api.nvim_buf_set_lines(preview_buf, 0, -1, false, vim.split(code, '\n', { plain = true }))
  vim.bo[preview_buf].modifiable = false
  if language and vim.bo[preview_buf].filetype ~= language then
    vim.bo[preview_buf].filetype = language
  end
end

local function preview_close()
  local w = preview_window(false)
  if w and #vim.api.nvim_list_wins() > 1 then
    pcall(vim.api.nvim_win_close, w, true)
  end
end

client.on('intent/partial', function(p)
  if type(p) ~= 'table' then
    return
  end
  -- The request this belongs to: the only one, or the one it names.
  local req
  for _, r in pairs(M.pending) do
    req = r
  end
  if not req then
    return
  end
  -- text is what the model added, or with reset the code so far (the
  -- server restarts the preview when its reading of the answer changes).
  if type(p.text) ~= 'string' then
    return
  end
  if p.reset then
    req.code = p.text
  else
    req.code = req.code .. p.text
  end
  req.partials = req.partials + 1
  preview_set(req.code, req.language)
end)

client.on_death(function(reason)
  for buf, r in pairs(M.pending) do
    M.pending[buf] = nil
    r.done({ message = reason }, nil)
  end
end)

-- --- review -------------------------------------------------------------------

local function pending_hunks(rv)
  local n = 0
  for _, h in ipairs(rv.hunks) do
    if h.status == 'pending' then
      n = n + 1
    end
  end
  return n
end

-- The hunk's first row in the buffer now (1-based; for an insertion, the
-- row it goes after). track() moves it with every change of the buffer.
local function cur_row(_, h)
  return h.row
end

-- Why a hunk cannot be written, as shown at the hunk.
local stale_reasons = {
  edited = 'STALE: its lines changed since the proposal; it cannot be applied (gr drops it)',
  writing = 'STALE: the buffer changed while the model wrote; this proposal cannot be applied ' ..
    '(run :KilnIntent again)',
}

-- The proposed buffer of a split review: the buffer now plus the hunks
-- still pending, and each pending hunk's first row in it.
local function proposed_lines(rv)
  local lines = vim.api.nvim_buf_get_lines(rv.buf, 0, -1, false)
  local shift = 0
  for _, h in ipairs(rv.hunks) do
    if h.status == 'pending' then
      local row = cur_row(rv, h) + shift
      -- A stale hunk's lines may have been deleted: it is shown at the end.
      local first = math.max(1, math.min(h.a_count > 0 and row or row + 1, #lines + 1))
      for _ = 1, h.a_count do
        if lines[first] ~= nil then
          table.remove(lines, first)
        end
      end
      for i, l in ipairs(h.lines) do
        table.insert(lines, first + i - 1, l)
      end
      h.p_row = first
      shift = shift + #h.lines - h.a_count
    end
  end
  return lines
end

local function diag_items(h, row0)
  local items = {}
  for _, d in ipairs(h.diagnostics or {}) do
    local it = vim.deepcopy(d)
    it.lnum = row0 + (d.lnum - (h.b_start - 1))
    it.end_lnum = it.lnum + (d.end_lnum - d.lnum)
    table.insert(items, it)
  end
  return items
end

-- The rules a list of diagnostics names (their codes), in order, once each.
local function rule_names(diags, only_errors)
  local out, seen = {}, {}
  for _, d in ipairs(diags or {}) do
    local code = d.code or (d.user_data and d.user_data.lsp and d.user_data.lsp.code)
    if code and code ~= vim.NIL and not seen[code] and
        (not only_errors or (d.severity or 1) == vim.diagnostic.severity.ERROR) then
      seen[code] = true
      table.insert(out, tostring(code))
    end
  end
  return out
end
M.rule_names = rule_names

-- The badge of a hunk of a denied proposal: the rules that denied it (its
-- own, else the proposal's).
local function deny_badge(rv, h)
  if rv.proposal.verdict ~= 'deny' then
    return nil
  end
  local rules = rule_names(h.diagnostics, true)
  local where = ''
  if #rules == 0 then
    rules = rv.rules
    where = ' (elsewhere in the proposal)'
  end
  return ('DENIED by %s%s'):format(#rules > 0 and table.concat(rules, ', ') or 'the validator', where)
end

-- Words, spaces and single punctuation marks of a line, as byte spans.
local function tokens(line)
  local out, i = {}, 1
  while i <= #line do
    local s, e = line:find('^[%w_]+', i)
    if not s then
      s, e = line:find('^%s+', i)
    end
    if not s then
      s, e = i, i
    end
    table.insert(out, { s, e })
    i = e + 1
  end
  return out
end

--- The changed part of new against old, word by word: the byte spans
--- (0-based start, exclusive end) in old and in new between their common
--- leading and trailing words; nil when the lines are equal.
function M.word_diff(old, new)
  if old == new then
    return nil
  end
  local a, b = tokens(old), tokens(new)
  local pre = 0
  while pre < #a and pre < #b do
    local x, y = a[pre + 1], b[pre + 1]
    if old:sub(x[1], x[2]) ~= new:sub(y[1], y[2]) then
      break
    end
    pre = pre + 1
  end
  local suf = 0
  while suf < #a - pre and suf < #b - pre do
    local x, y = a[#a - suf], b[#b - suf]
    if old:sub(x[1], x[2]) ~= new:sub(y[1], y[2]) then
      break
    end
    suf = suf + 1
  end
  local function span(toks, line)
    local s = pre < #toks and toks[pre + 1][1] - 1 or #line
    local e = suf > 0 and toks[#toks - suf + 1][1] - 1 or #line
    return { math.min(s, e), e }
  end
  return span(a, old), span(b, new)
end

-- Diagnostics of a hunk's proposed lines, as vim.diagnostic items whose
-- first proposed line is row0 (0-based).
local function accepted_diags(rv, h)
  return diag_items(h, cur_row(rv, h) - 1 + (h.a_count == 0 and 1 or 0))
end

local function render(rv)
  local buf = rv.buf
  vim.api.nvim_buf_clear_namespace(buf, ns, 0, -1)
  vim.diagnostic.reset(diag_ns, buf)
  local nlines = vim.api.nvim_buf_line_count(buf)
  -- Accepted hunks' lines are in the buffer now: their diagnostics go on
  -- them, and stay until the review ends.
  local items = {}
  for _, h in ipairs(rv.hunks) do
    if h.status == 'accepted' then
      vim.list_extend(items, accepted_diags(rv, h))
    end
  end
  if rv.style == 'split' then
    vim.diagnostic.set(diag_ns, buf, items)
    local lines = proposed_lines(rv)
    if rv.pbuf and vim.api.nvim_buf_is_valid(rv.pbuf) then
      vim.bo[rv.pbuf].modifiable = true
      vim.api.nvim_buf_set_lines(rv.pbuf, 0, -1, false, lines)
      vim.bo[rv.pbuf].modifiable = false
      vim.api.nvim_buf_clear_namespace(rv.pbuf, ns, 0, -1)
      local pitems = {}
      for _, h in ipairs(rv.hunks) do
        if h.status == 'pending' then
          vim.list_extend(pitems, diag_items(h, h.p_row - 1))
          local badge = deny_badge(rv, h)
          local vt = {}
          if h.stale then
            table.insert(vt, { ' ' .. stale_reasons[h.stale] .. ' ', 'WarningMsg' })
          end
          if badge then
            table.insert(vt, { ' ' .. badge .. ' ', 'ErrorMsg' })
          end
          if #vt > 0 then
            vim.api.nvim_buf_set_extmark(rv.pbuf, ns, math.max(h.p_row - 1, 0), 0, { virt_text = vt, strict = false })
          end
        end
      end
      vim.diagnostic.set(diag_ns, rv.pbuf, pitems)
      pcall(vim.cmd, 'diffupdate')
    end
    return
  end
  for i, h in ipairs(rv.hunks) do
    if h.status == 'pending' then
      local row = cur_row(rv, h)
      local old = vim.api.nvim_buf_get_lines(buf, math.max(row - 1, 0), math.max(row - 1, 0) + h.a_count, false)
      -- Each proposed line's diagnostics, shown at its end.
      local on_line = {}
      for _, d in ipairs(h.diagnostics or {}) do
        local k = d.lnum - (h.b_start - 1) + 1
        on_line[k] = on_line[k] or {}
        table.insert(on_line[k], d)
      end
      local virt = {}
      for k, l in ipairs(h.lines) do
        local chunks
        local ospan, nspan
        if old[k] then
          ospan, nspan = M.word_diff(old[k], l)
        end
        if nspan and nspan[2] > nspan[1] then
          chunks = {
            { l:sub(1, nspan[1]), 'DiffAdd' }, { l:sub(nspan[1] + 1, nspan[2]), 'DiffText' },
            { l:sub(nspan[2] + 1), 'DiffAdd' },
          }
        else
          chunks = { { l, 'DiffAdd' } }
        end
        if ospan and ospan[2] > ospan[1] then
          vim.api.nvim_buf_set_extmark(buf, ns, row - 2 + k, ospan[1], {
            end_row = row - 2 + k, end_col = ospan[2], hl_group = 'DiffText', priority = 200, strict = false,
          })
        end
        for _, d in ipairs(on_line[k] or {}) do
          local sev = ({ 'Error', 'Warn', 'Info', 'Hint' })[d.severity or 1] or 'Error'
          table.insert(chunks, { ('  <- %s%s'):format(d.message, d.code and (' [' .. tostring(d.code) .. ']') or ''),
            'DiagnosticVirtualText' .. sev })
        end
        table.insert(virt, chunks)
      end
      local head = { { ('kiln hunk %d/%d (verdict %s)%s'):format(i, #rv.hunks,
        require('kiln.text').visible(rv.proposal.verdict or '?'), rv.hint), 'Comment' } }
      local badge = deny_badge(rv, h)
      if badge then
        table.insert(head, 1, { badge .. '  ', 'ErrorMsg' })
      end
      if h.stale then
        table.insert(head, 1, { stale_reasons[h.stale] .. '  ', 'WarningMsg' })
      end
      table.insert(virt, 1, head)
      local anchor, above
      if h.a_count > 0 then
        -- pcall: a stale hunk's lines may be gone from the buffer.
        pcall(vim.api.nvim_buf_set_extmark, buf, ns, row - 1, 0, {
          end_row = row - 1 + h.a_count, end_col = 0, hl_group = 'DiffDelete', hl_eol = true,
          strict = false,
        })
        anchor, above = row - 2 + h.a_count, false
      elseif row == 0 then
        anchor, above = 0, true
      else
        anchor, above = row - 1, false
      end
      anchor = math.max(0, math.min(anchor, nlines - 1))
      h.mark = vim.api.nvim_buf_set_extmark(buf, ns, anchor, 0, {
        virt_lines = virt, virt_lines_above = above,
      })
      h.anchor = anchor
      -- The proposed lines are virtual: their diagnostics also go on the
      -- row the hunk is shown at (for ]d, the quickfix list and the sign
      -- column), saying which proposed line they are about.
      for _, d in ipairs(h.diagnostics or {}) do
        local it = vim.deepcopy(d)
        it.message = ('proposed line %d: %s'):format(d.lnum - (h.b_start - 1) + 1, d.message)
        it.lnum, it.end_lnum, it.col, it.end_col = anchor, anchor, 0, 0
        table.insert(items, it)
      end
    end
  end
  vim.diagnostic.set(diag_ns, buf, items)
end

local review_keys = { 'accept', 'reject', 'accept_all', 'reject_all', 'next', 'prev', 'help' }

-- What each review key does, in the hint and in the help.
local key_help = {
  accept = { 'accept', 'accept the hunk under the cursor (:KilnAccept)' },
  reject = { 'reject', 'reject the hunk under the cursor (:KilnReject)' },
  accept_all = { 'all', 'accept all pending hunks (:KilnAccept!)' },
  reject_all = { 'reject all', 'reject all pending hunks (:KilnReject!)' },
  next = { 'next', 'go to the next pending hunk' },
  prev = { 'prev', 'go to the previous pending hunk' },
  help = { 'help', 'show this list' },
}

--- The review's one-line hint: every key with a word, e.g.
--- "ga accept, gr reject, gA all, gR reject all, ]h next, [h prev, g? help".
function M.hint()
  local keys = config.options.keymaps and config.options.keymaps.review or {}
  local parts = {}
  for _, name in ipairs(review_keys) do
    if keys[name] then
      table.insert(parts, keys[name] .. ' ' .. key_help[name][1])
    end
  end
  return table.concat(parts, ', ')
end

--- The review's help: one line per key.
function M.help_lines()
  local keys = config.options.keymaps and config.options.keymaps.review or {}
  local lines = { 'kiln review keys' }
  for _, name in ipairs(review_keys) do
    if keys[name] then
      table.insert(lines, ('  %-6s %s'):format(keys[name], key_help[name][2]))
    end
  end
  table.insert(lines, '  (:help kiln-review; q or <Esc> closes this)')
  return lines
end

local help_win = nil

--- Show the review's keys in a floating window at the cursor; q, <Esc> or
--- leaving it closes it. Returns the window.
function M.show_help()
  if help_win and vim.api.nvim_win_is_valid(help_win) then
    vim.api.nvim_win_close(help_win, true)
  end
  local lines = M.help_lines()
  local b = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(b, 0, -1, false, lines)
  compat.set_buf(b, { bufhidden = 'wipe', modifiable = false })
  local width = 0
  for _, l in ipairs(lines) do
    width = math.max(width, vim.fn.strdisplaywidth(l))
  end
  help_win = vim.api.nvim_open_win(b, false, {
    relative = 'cursor', row = 1, col = 0, width = width + 1, height = #lines, style = 'minimal',
    border = 'single',
  })
  for _, k in ipairs({ 'q', '<Esc>' }) do
    vim.keymap.set('n', k, function() pcall(vim.api.nvim_win_close, help_win, true) end, { buffer = b })
  end
  -- Closed by the next move in the window it was opened from.
  local w = help_win
  vim.api.nvim_create_autocmd({ 'CursorMoved', 'BufLeave', 'InsertEnter' }, {
    buffer = vim.api.nvim_get_current_buf(), once = true,
    callback = function() pcall(vim.api.nvim_win_close, w, true) end,
  })
  return help_win
end

local function map_keys(rv, buf)
  local keys = config.options.keymaps and config.options.keymaps.review
  if not keys then
    return
  end
  local fns = {
    accept = function() M.accept(rv.buf) end,
    reject = function() M.reject(rv.buf) end,
    accept_all = function() M.accept_all(rv.buf) end,
    reject_all = function() M.reject_all(rv.buf) end,
    next = function() M.jump(rv.buf, 1) end,
    prev = function() M.jump(rv.buf, -1) end,
    help = function() M.show_help() end,
  }
  for _, name in ipairs(review_keys) do
    if keys[name] then
      vim.keymap.set('n', keys[name], fns[name], { buffer = buf, desc = 'kiln: ' .. name:gsub('_', ' ') })
      table.insert(rv.mapped, { buf, keys[name] })
    end
  end
end

local function end_review(rv, why)
  if M.reviews[rv.buf] ~= rv then
    return
  end
  M.reviews[rv.buf] = nil
  if vim.api.nvim_buf_is_valid(rv.buf) then
    vim.api.nvim_buf_clear_namespace(rv.buf, ns, 0, -1)
    vim.diagnostic.reset(diag_ns, rv.buf)
    -- Denied code written into the buffer keeps its diagnostics until the
    -- buffer next changes.
    local items = {}
    if rv.proposal.verdict == 'deny' and not rv.conflict then
      for _, h in ipairs(rv.hunks) do
        if h.status == 'accepted' then
          vim.list_extend(items, accepted_diags(rv, h))
        end
      end
    end
    if #items > 0 then
      vim.diagnostic.set(diag_ns, rv.buf, items)
      vim.api.nvim_buf_attach(rv.buf, false, {
        on_lines = function(_, b)
          vim.schedule(function()
            if not M.reviews[b] and vim.api.nvim_buf_is_valid(b) then
              vim.diagnostic.reset(diag_ns, b)
            end
          end)
          return true
        end,
      })
    end
  end
  for _, m in ipairs(rv.mapped) do
    if vim.api.nvim_buf_is_valid(m[1]) then
      pcall(vim.keymap.del, 'n', m[2], { buffer = m[1] })
    end
  end
  if rv.pbuf and vim.api.nvim_buf_is_valid(rv.pbuf) then
    for _, w in ipairs(vim.api.nvim_list_wins()) do
      if vim.api.nvim_win_get_buf(w) == rv.buf then
        vim.api.nvim_win_call(w, function() pcall(vim.cmd, 'diffoff') end)
      end
    end
    pcall(vim.api.nvim_buf_delete, rv.pbuf, { force = true })
  end
  rv.ended = why
  if why then
    client.notify(why)
  end
end

-- The buffer must be as the review knows it: track() follows every change
-- it is told of; anything else (a reload) ends the review.
local function stale(rv)
  return doc.version(rv.buf) ~= rv.tick
end

-- Follow the buffer's changes while the review is open: hunks before a
-- change move with it, hunks after it stay, and a pending hunk whose lines
-- the change touched goes stale (it is shown, marked, and never written).
-- The lines the proposal covers (rv.region) move and grow the same way.
local function track(rv)
  local function user_change(first, last, new_last)
    local delta = new_last - last
    for _, h in ipairs(rv.hunks) do
      if h.status ~= 'rejected' then
        local s, e
        if h.status == 'accepted' then
          s = h.a_count > 0 and h.row - 1 or h.row
          e = s + #h.lines
        elseif h.a_count > 0 then
          s, e = h.row - 1, h.row - 1 + h.a_count
        end
        if s then
          if last <= s then
            h.row = h.row + delta
          elseif first < e and h.status == 'pending' then
            h.stale = h.stale or 'edited'
          end
        else
          -- A pending insertion goes between rows p and p + 1 (0-based p).
          local p = h.row
          if first < p and last <= p then
            h.row = h.row + delta
          elseif first < p then
            h.stale = h.stale or 'edited'
          end
        end
      end
    end
    local r = rv.region
    if last <= r[1] - 1 then
      r[1], r[2] = r[1] + delta, r[2] + delta
    elseif first < r[2] then
      r[1] = math.min(r[1], first + 1)
      r[2] = math.max(r[2] + delta, r[1] - 1)
    end
  end
  local function own_change(h, last, new_last)
    local delta = new_last - last
    for _, o in ipairs(rv.hunks) do
      if o ~= h and o.status ~= 'rejected' and o.index > h.index then
        o.row = o.row + delta
      end
    end
    rv.region[2] = rv.region[2] + delta
  end
  vim.api.nvim_buf_attach(rv.buf, false, {
    on_lines = function(_, _, tick, first, last, new_last)
      if M.reviews[rv.buf] ~= rv then
        return true
      end
      if rv.writing then
        own_change(rv.writing, last, new_last)
      else
        rv.user_edited = true
        user_change(first, last, new_last)
        vim.schedule(function()
          if M.reviews[rv.buf] == rv then
            render(rv)
          end
        end)
      end
      rv.tick = tick
      local p = M.proposals[rv.buf]
      if p and p.rv == rv then
        p.tick = tick
      end
    end,
    on_detach = function()
      vim.schedule(function()
        if M.reviews[rv.buf] == rv then
          rv.conflict = true
          end_review(rv)
        end
      end)
    end,
    on_reload = function()
      vim.schedule(function()
        if M.reviews[rv.buf] == rv then
          rv.conflict = true
          client.notify('the buffer was reloaded: the review of the proposal ended', vim.log.levels.WARN)
          end_review(rv)
        end
      end)
    end,
  })
end

local function conflict(rv)
  client.notify('the buffer changed since the request: the proposal was not applied ' ..
    '(run :KilnIntent again)', vim.log.levels.WARN)
  rv.conflict = true
  end_review(rv)
end

-- Write hunk h into the buffer. Every write after the first joins the
-- first one's undo block, so one `u` takes the whole proposal back.
local function write_hunk(rv, h)
  local row = cur_row(rv, h)
  if rv.written then
    pcall(vim.cmd, 'undojoin')
  end
  -- track() moves the other hunks; this one is written as it stands.
  rv.writing = h
  if h.a_count > 0 then
    vim.api.nvim_buf_set_lines(rv.buf, row - 1, row - 1 + h.a_count, false, h.lines)
  else
    vim.api.nvim_buf_set_lines(rv.buf, row, row, false, h.lines)
  end
  rv.writing = nil
  h.status = 'accepted'
  rv.written = true
end

-- The hunk under the cursor (in the buffer or the proposed window), else
-- the first pending one.
local function hunk_at_cursor(rv)
  local win = vim.api.nvim_get_current_win()
  local wbuf = vim.api.nvim_win_get_buf(win)
  local cursor = vim.api.nvim_win_get_cursor(win)[1]
  local first
  for _, h in ipairs(rv.hunks) do
    if h.status == 'pending' then
      first = first or h
      local lo, hi
      if wbuf == rv.pbuf and h.p_row then
        lo, hi = h.p_row, h.p_row + math.max(#h.lines, 1) - 1
      else
        local row = cur_row(rv, h)
        lo, hi = row, row + math.max(h.a_count, 1) - 1
        if h.a_count == 0 then
          lo, hi = math.max(row, 1), math.max(row, 1)
        end
      end
      if cursor >= lo and cursor <= hi then
        return h
      end
    end
  end
  return first
end

local function after_decision(rv)
  if pending_hunks(rv) == 0 then
    local accepted = 0
    for _, h in ipairs(rv.hunks) do
      if h.status == 'accepted' then
        accepted = accepted + 1
      end
    end
    if accepted == 0 then
      -- Rejected whole: nothing is left for :KilnRun to approve.
      M.proposals[rv.buf] = nil
    end
    end_review(rv, ('review done: %d of %d hunks accepted'):format(accepted, #rv.hunks))
  else
    render(rv)
  end
end

local function get_review(buf)
  buf = (buf == nil or buf == 0) and vim.api.nvim_get_current_buf() or buf
  local rv = M.reviews[buf]
  if not rv then
    -- From the proposed window of a split review.
    for _, r in pairs(M.reviews) do
      if r.pbuf == buf then
        return r
      end
    end
    client.notify('no proposal under review here', vim.log.levels.WARN)
  end
  return rv
end

--- Accept the hunk under the cursor (or hunk number n).
-- Accepting a denied proposal writes code the validator refused: ask
-- first, once per review. fn runs when the answer is yes (at once, or when
-- vim.ui.select answers); returns what fn returned, or false.
local function confirm_denied(rv, fn)
  if rv.proposal.verdict ~= 'deny' or rv.confirmed then
    return fn()
  end
  local yes = 'Write the denied code into the buffer'
  local result = false
  vim.ui.select({ yes, 'Cancel' }, {
    prompt = ('kiln: the validator denied this proposal (%s); it cannot run. ' ..
      'Write it into the buffer anyway?'):format(#rv.rules > 0 and table.concat(rv.rules, ', ') or
      'see its diagnostics'),
  }, function(choice)
    if choice == yes then
      rv.confirmed = true
      if M.reviews[rv.buf] == rv then
        result = fn()
      end
    else
      client.notify('the denied proposal was not written; it stays under review')
    end
  end)
  return result
end

function M.accept(buf, n)
  local rv = get_review(buf)
  if not rv then
    return false
  end
  if stale(rv) then
    conflict(rv)
    return false
  end
  local h = n and rv.hunks[n] or hunk_at_cursor(rv)
  if not h or h.status ~= 'pending' then
    return false
  end
  return confirm_denied(rv, function()
    if stale(rv) then
      conflict(rv)
      return false
    end
    if h.status ~= 'pending' then
      return false
    end
    if h.stale then
      client.notify(('hunk %d: %s'):format(h.index, stale_reasons[h.stale]), vim.log.levels.WARN)
      return false
    end
    write_hunk(rv, h)
    rv.tick = doc.version(rv.buf)
    M.proposals[rv.buf].tick = rv.tick
    after_decision(rv)
    return true
  end)
end

function M.reject(buf, n)
  local rv = get_review(buf)
  if not rv then
    return false
  end
  local h = n and rv.hunks[n] or hunk_at_cursor(rv)
  if not h or h.status ~= 'pending' then
    return false
  end
  h.status = 'rejected'
  after_decision(rv)
  return true
end

function M.accept_all(buf)
  local rv = get_review(buf)
  if not rv then
    return false
  end
  if stale(rv) then
    conflict(rv)
    return false
  end
  return confirm_denied(rv, function()
    if stale(rv) then
      conflict(rv)
      return false
    end
    local left, wrote = {}, false
    for _, h in ipairs(rv.hunks) do
      if h.status == 'pending' and not h.stale then
        write_hunk(rv, h)
        wrote = true
      elseif h.status == 'pending' then
        table.insert(left, tostring(h.index))
      end
    end
    if #left > 0 then
      client.notify(('hunk%s %s not written: %s'):format(#left == 1 and '' or 's', table.concat(left, ', '),
        'their lines changed since the proposal'), vim.log.levels.WARN)
    end
    rv.tick = doc.version(rv.buf)
    M.proposals[rv.buf].tick = rv.tick
    after_decision(rv)
    return wrote
  end)
end

function M.reject_all(buf)
  local rv = get_review(buf)
  if not rv then
    return false
  end
  for _, h in ipairs(rv.hunks) do
    if h.status == 'pending' then
      h.status = 'rejected'
    end
  end
  after_decision(rv)
  return true
end

--- Move the cursor to the next (dir 1) or previous (-1) pending hunk.
function M.jump(buf, dir)
  local rv = get_review(buf)
  if not rv then
    return
  end
  local cursor = vim.api.nvim_win_get_cursor(0)[1]
  local rows = {}
  for _, h in ipairs(rv.hunks) do
    if h.status == 'pending' then
      table.insert(rows, math.max(1, cur_row(rv, h)))
    end
  end
  local target
  for i = (dir > 0 and 1 or #rows), (dir > 0 and #rows or 1), dir do
    if (dir > 0 and rows[i] > cursor) or (dir < 0 and rows[i] < cursor) then
      target = rows[i]
      break
    end
  end
  target = target or rows[dir > 0 and 1 or #rows]
  if target then
    vim.api.nvim_win_set_cursor(0, { math.min(target, vim.api.nvim_buf_line_count(0)), 0 })
  end
end

local function open_split(rv)
  local win = vim.fn.bufwinid(rv.buf)
  if win == -1 then
    return
  end
  rv.pbuf = vim.api.nvim_create_buf(false, true)
  pcall(vim.api.nvim_buf_set_name, rv.pbuf, 'kiln://proposal/' .. rv.proposal.proposalId)
  compat.set_buf(rv.pbuf, { buftype = 'nofile', bufhidden = 'wipe', swapfile = false,
    filetype = vim.bo[rv.buf].filetype })
  local cur = vim.api.nvim_get_current_win()
  vim.api.nvim_set_current_win(win)
  vim.cmd('diffthis')
  vim.cmd('rightbelow vsplit')
  vim.api.nvim_win_set_buf(0, rv.pbuf)
  -- The split view's hint: the proposal window's status line.
  vim.wo.statusline = ('kiln proposal %s (verdict %s): %s'):format(tostring(rv.proposal.proposalId),
    require('kiln.text').visible(rv.proposal.verdict or '?'), (M.hint():gsub('%%', '%%%%')))
  render(rv)
  vim.cmd('diffthis')
  vim.api.nvim_set_current_win(cur)
end

--- Show a proposal for buf, requested when the buffer was snapshot (at
--- document version `version`, default tick). The hunks go from `base`
--- (default the snapshot: the lines the buffer holds now, at tick) to the
--- proposed text.
function M.start_review(buf, proposal, snapshot, tick, base, version, region)
  base = base or snapshot
  version = version or tick
  local old = M.reviews[buf]
  if old then
    end_review(old)
  end
  local uri = vim.uri_from_bufnr(buf)
  local edits = edit.edits_for(proposal.edit, uri)
  if not edits and type(proposal.hunks) == 'table' then
    edits = {}
    for _, h in ipairs(proposal.hunks) do
      table.insert(edits, { range = h.range, newText = h.newText })
    end
  end
  if not edits then
    client.notify('the proposal carries no edit', vim.log.levels.ERROR)
    return nil
  end
  local new = edit.apply(snapshot, edits)
  local hunks = edit.hunks(base, new)
  -- An empty buffer is one empty line: code for it replaces that line
  -- instead of going before or after it (no blank line left over).
  if #base == 1 and base[1] == '' and #hunks == 1 and hunks[1].a_count == 0 and #new > 1 then
    local lines, b_start = vim.list_slice(new, 1, #new - 1), 1
    if new[1] == '' then
      lines, b_start = vim.list_slice(new, 2, #new), 2
    end
    hunks[1] = { a_start = 1, a_count = 1, b_start = b_start, b_count = #lines, lines = lines, status = 'pending' }
  end
  -- The validator's diagnostics are positions in the code, which starts
  -- where the (first) edit starts; each goes with the hunk that holds it.
  local start_row = math.huge
  for _, e in ipairs(edits) do
    start_row = math.min(start_row, e.range.start.line)
  end
  local items = validate.convert(proposal.diagnostics, new, start_row == math.huge and 0 or start_row)
  for _, d in ipairs(items) do
    for _, h in ipairs(hunks) do
      if d.lnum + 1 >= h.b_start and d.lnum + 1 < h.b_start + math.max(h.b_count, 1) then
        h.diagnostics = h.diagnostics or {}
        table.insert(h.diagnostics, d)
        break
      end
    end
  end
  local hint = M.hint()
  hint = hint ~= '' and ('   ' .. hint) or ''
  -- The lines the proposal covers (1-based, inclusive; hi < lo when
  -- empty): the request's selection and every hunk, in the base's rows.
  local lo, hi = math.huge, -math.huge
  if region then
    lo, hi = region[1], region[2]
  end
  for _, hk in ipairs(hunks) do
    lo = math.min(lo, hk.a_count > 0 and hk.a_start or hk.a_start + 1)
    hi = math.max(hi, hk.a_start + hk.a_count - 1)
  end
  if lo == math.huge then
    lo, hi = 1, 0
  end
  local rv = {
    buf = buf, proposal = proposal, hunks = hunks, tick = tick, snapshot = snapshot,
    style = config.options.diff_style, mapped = {}, hint = hint, region = { lo, hi },
    rules = rule_names(items, true),
  }
  M.reviews[buf] = rv
  -- version: the document version the proposal was made for, which
  -- intent/approve checks; tick: the buffer as the review left it; rv: the
  -- review (open or ended), whose hunks say what was kept.
  M.proposals[buf] = { proposal = proposal, tick = tick, version = version, snapshot = snapshot, rv = rv }
  if #hunks == 0 then
    end_review(rv, 'the proposal changes nothing')
    return rv
  end
  for i, hk in ipairs(hunks) do
    hk.row, hk.index = hk.a_start, i
  end
  -- The buffer changed while the model wrote: where those changes fell is
  -- not known, so no hunk can be written; each says so where it is shown.
  local changed = stale(rv)
  if changed then
    rv.changed_while_writing = true
    for _, hk in ipairs(hunks) do
      hk.stale = 'writing'
    end
    rv.tick = doc.version(buf)
  end
  track(rv)
  if rv.style == 'split' then
    open_split(rv)
    map_keys(rv, rv.pbuf)
  else
    render(rv)
  end
  map_keys(rv, buf)
  if changed then
    client.notify('the buffer changed while the model wrote: the proposal is shown but ' ..
      'cannot be applied', vim.log.levels.WARN)
  end
  client.notify(('proposal %s: %d hunk%s, verdict %s'):format(proposal.proposalId or '?', #hunks,
    #hunks == 1 and '' or 's', tostring(proposal.verdict)))
  return rv
end

--- The rules a denied run or proposal broke, as shown to the person: one
--- "CODE (line N: message)" a diagnostic, every one of them, code and
--- message made visible (kiln.text), errors first; and the rule codes of
--- the errors, once each. diags are LSP diagnostics.
function M.denied_rules(diags)
  local visible = require('kiln.text').visible
  local errors, warnings, names = {}, {}, {}
  for _, d in ipairs(type(diags) == 'table' and diags or {}) do
    local code = d.code ~= nil and d.code ~= vim.NIL and visible(d.code) or '?'
    local line = type(d.range) == 'table' and d.range.start and d.range.start.line
    local item = ('%s (line %s: %s)'):format(code, line and tostring(line + 1) or '?', visible(d.message or ''))
    if (d.severity or 1) == 1 then
      table.insert(errors, item)
      if code ~= '?' and not vim.tbl_contains(names, code) then
        table.insert(names, code)
      end
    else
      table.insert(warnings, item)
    end
  end
  return errors, warnings, names
end

--- The message for code the validator denied: every rule that refused it,
--- with its line (in the code) and message, any warning too, and the
--- setting that decides what the validator refuses (the profile), never a
--- protocol field. diags are LSP diagnostics; what names the code ("this
--- code", ...). With opts.override (a snippet/run refusal: the code is
--- the person's), it also says how to be offered a run anyway
--- (validator.allowOverride) unless opts.override_allowed says the server
--- allows one, when it says that it asks.
function M.denied_message(diags, what, opts)
  opts = opts or {}
  local errors, warnings, names = M.denied_rules(diags)
  local profile = type(config.options.validator) == 'table' and config.options.validator.profile or 'standard'
  local example = ("['%s'] = 'warning'"):format(names[1] or 'RULE')
  local msg = ('the validator denied %s: %s'):format(what or 'this code',
    #errors > 0 and table.concat(errors, '; ') or 'see its diagnostics')
  if #warnings > 0 then
    msg = msg .. '; also warned: ' .. table.concat(warnings, '; ')
  end
  if opts.override and opts.override_allowed then
    return msg .. '. It did not run: you are asked whether to run it anyway'
  end
  msg = msg .. ('. It does not run. What the validator refuses is set by its ' ..
    'profile ("%s"): to allow this, lower %s in setup{ validator = { profiles = { %s = { %s } } } } ' ..
    '(or pick another validator.profile) and ask again'):format(profile,
    #names > 1 and 'those rules' or 'that rule', profile, example)
  if opts.override then
    msg = msg .. '; to be offered to run such code anyway, one run at a time, set ' ..
      'setup{ validator = { allowOverride = true } }'
  end
  return msg
end

--- A repaired proposal (intent/approve's repair, from its `repaired`
--- attempt or its `needs_approval` answer) for buf: the review follows it,
--- so that what is shown, and what `ga` writes, is the code that runs. The
--- repaired proposal was made for the same text as the first one, so its
--- edit applies to the same snapshot; the new review goes from the buffer
--- as it is now (the snapshot while the first review was open, or the
--- snapshot with the first proposal written) to that text.
function M.follow_repair(buf, proposal)
  local p = M.proposals[buf]
  if not p or type(proposal) ~= 'table' or not vim.api.nvim_buf_is_valid(buf) or
      p.proposal.proposalId == proposal.proposalId then
    return nil
  end
  local old = p.proposal.proposalId
  -- What :KilnRun approves from now on.
  p.proposal = proposal
  if doc.version(buf) ~= p.tick then
    client.notify(('proposal %s was repaired as %s, but the buffer changed since: the repaired ' ..
      'code is not shown (run :KilnIntent again)'):format(tostring(old), tostring(proposal.proposalId)),
      vim.log.levels.WARN)
    return nil
  end
  client.notify(('proposal %s was repaired: the review now shows %s, the code that runs')
    :format(tostring(old), tostring(proposal.proposalId)))
  local region = p.rv and p.rv.region
  return M.start_review(buf, proposal, p.snapshot, p.tick, doc.lines(buf), p.version, region)
end

--- :KilnIntent. opts: { text, line1, line2 (a range), buf, on_done(err, rv) }.
function M.run(opts)
  local buf = opts.buf or vim.api.nvim_get_current_buf()
  if M.pending[buf] then
    client.notify('an intent is already being worked on for this buffer (:KilnCancel)',
      vim.log.levels.WARN)
    return nil
  end
  local item = doc.item(buf)
  local params = {
    intent = opts.text,
    textDocument = item,
    language = doc.language(buf),
    sessionId = M.session_id,
    workDoneToken = ('kiln-intent-%d'):format(buf),
  }
  if opts.line1 then
    params.range = doc.line_range(buf, opts.line1, opts.line2)
  else
    local c = vim.api.nvim_win_get_cursor(0)
    local row = vim.api.nvim_win_get_buf(0) == buf and c[1] or 1
    -- Insert below the cursor's line, whole lines.
    local n = vim.api.nvim_buf_line_count(buf)
    if row < n or vim.bo[buf].eol then
      params.position = { line = row, character = 0 }
    else
      local last = vim.api.nvim_buf_get_lines(buf, n - 1, n, false)[1] or ''
      params.position = { line = n - 1, character = doc.to_server_col(buf, n - 1, #last) }
    end
  end
  local req = {
    tick = item.version, snapshot = doc.lines(buf), code = '', partials = 0,
    language = params.language, region = opts.line1 and { opts.line1, opts.line2 } or nil,
  }
  req.done = function(err, result)
    M.pending[buf] = nil
    -- History hook (kiln.history): the intent and what came back.
    require('kiln.history').record_intent(opts.text, err, result and (result.proposal or result))
    preview_close()
    local rv
    if err then
      client.notify('intent: ' .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
    elseif vim.api.nvim_buf_is_valid(buf) then
      local proposal = result and (result.proposal or result) or {}
      rv = M.start_review(buf, proposal, req.snapshot, req.tick, nil, nil, req.region)
    end
    if opts.on_done then
      opts.on_done(err, rv)
    end
  end
  M.pending[buf] = req
  req.rid = client.request('intent/run', params, function(err, result)
    if M.pending[buf] == req then
      req.done(err, result)
    end
  end)
  return req
end

--- Cancel the intent in flight for buf; true if there was one.
function M.cancel(buf)
  buf = buf or vim.api.nvim_get_current_buf()
  local req = M.pending[buf]
  if not req then
    return false
  end
  client.cancel(req.rid)
  M.pending[buf] = nil
  preview_close()
  client.notify('intent cancelled')
  return true
end

local function hunk_list(rv, status)
  local ns_ = {}
  for i, h in ipairs(rv.hunks) do
    if h.status == status then
      table.insert(ns_, tostring(i))
    end
  end
  return ns_
end

--- What :KilnRun runs for buf after a review (nil: no proposal; run the
--- buffer as code):
---   { kind = 'approve', proposal, version } while every hunk is still
---   pending (the proposal as proposed) or every hunk was accepted and the
---   buffer is as the review left it (it holds exactly the proposal);
---   version is the request's while the buffer holds only what the review
---   wrote, else the buffer's own (so that the server reports the conflict);
---   { kind = 'kept', line1, line2, accepted, rejected, pending } when the
---   user kept part of it: the lines the proposal covers, as they are now.
function M.run_plan(buf)
  local p = M.proposals[buf]
  if not p then
    return nil
  end
  local now = doc.version(buf)
  local rv = p.rv
  local accepted = rv and hunk_list(rv, 'accepted') or {}
  local rejected = rv and hunk_list(rv, 'rejected') or {}
  local pending = rv and hunk_list(rv, 'pending') or {}
  local whole = not rv or #rejected == 0 and (#accepted == 0 or #pending == 0)
  -- clean: the buffer changed only by what the review wrote.
  local clean = not (rv and (rv.user_edited or rv.changed_while_writing))
  if whole and clean and now == p.tick then
    return { kind = 'approve', proposal = p.proposal, version = p.version, as_proposed = #accepted == 0 }
  end
  if whole and #accepted == 0 and M.reviews[buf] then
    -- The proposal as proposed, for a text that changed since: the server
    -- reports the conflict.
    return { kind = 'approve', proposal = p.proposal, version = now, as_proposed = true }
  end
  if now ~= p.tick or not rv then
    return nil
  end
  return { kind = 'kept', proposal = p.proposal, line1 = rv.region[1], line2 = rv.region[2],
    accepted = accepted, rejected = rejected, pending = pending }
end

--- The proposal :KilnRun would approve for buf, and the version to
--- approve it with (see run_plan).
function M.runnable(buf)
  local plan = M.run_plan(buf)
  if plan and plan.kind == 'approve' then
    return plan.proposal, plan.version
  end
  return nil
end

function M.review(buf)
  return M.reviews[buf or vim.api.nvim_get_current_buf()]
end

return M

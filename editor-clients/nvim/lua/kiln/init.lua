-- kiln: the Neovim client of the kiln server. setup{} takes the options in
-- kiln.config; the commands (plugin/kiln.lua) call the functions here. The
-- server starts on first use, not at setup.
local M = {}

local compat = require('kiln.compat')
local config = require('kiln.config')

local setup_done = false

function M.setup(opts)
  config.set(opts)
  setup_done = true
  local g = config.options.keymaps and config.options.keymaps.global or {}
  local cmds = {
    intent = '<cmd>KilnIntent<cr>', run = '<cmd>KilnRun<cr>', cancel = '<cmd>KilnCancel<cr>',
    validate = '<cmd>KilnValidate<cr>',
  }
  for name, lhs in pairs(g) do
    if cmds[name] and lhs then
      vim.keymap.set('n', lhs, cmds[name], { desc = 'kiln: ' .. name })
      if name ~= 'cancel' then
        vim.keymap.set('x', lhs, ':' .. cmds[name]:sub(6), { desc = 'kiln: ' .. name })
      end
    end
  end
  return M
end

local function ensure_setup()
  if not setup_done then
    M.setup(vim.g.kiln_options)
  end
end

local function cur_buf()
  return vim.api.nvim_get_current_buf()
end

--- :KilnValidate: opts.line1/line2 when given a range.
function M.validate(opts)
  ensure_setup()
  opts = opts or {}
  return require('kiln.validate').validate(opts.buf or cur_buf(), opts.line1, opts.line2, opts.on_done)
end

--- :KilnRun: approve and run the buffer's proposal, else run the range or
--- the buffer as code.
function M.run(opts)
  ensure_setup()
  opts = opts or {}
  local buf = opts.buf or cur_buf()
  local run = require('kiln.run')
  local intent = require('kiln.intent')
  local plan = not opts.line1 and intent.run_plan(buf) or nil
  local client = require('kiln.client')
  if plan and plan.kind == 'approve' then
    local p = plan.proposal
    if p.verdict == 'deny' then
      client.notify(intent.denied_message(p.diagnostics, 'this proposal'), vim.log.levels.ERROR)
      return nil
    end
    local what = ('proposal %s %s'):format(tostring(p.proposalId),
      plan.as_proposed and 'as proposed (not written into the buffer)' or 'as accepted into the buffer')
    client.notify('running ' .. what)
    return run.approve(p.proposalId, 'kiln run: ' .. what, buf, plan.version)
  end
  if plan and plan.kind == 'kept' then
    -- Part of the proposal was kept: what runs is those lines as they are
    -- now, never the model's whole proposal.
    local doc = require('kiln.doc')
    local name = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(buf), ':t')
    local parts = { 'hunk' .. (#plan.accepted == 1 and ' ' or 's ') .. table.concat(plan.accepted, ', ') ..
      ' accepted' }
    if #plan.rejected > 0 then
      table.insert(parts, table.concat(plan.rejected, ', ') .. ' rejected')
    end
    if #plan.pending > 0 then
      table.insert(parts, table.concat(plan.pending, ', ') .. ' still pending, not run')
    end
    local what = ('lines %d-%d of %s as you kept them (proposal %s: %s)'):format(plan.line1, plan.line2,
      name ~= '' and name or '[buffer]', tostring(plan.proposal.proposalId), table.concat(parts, '; '))
    if plan.line2 < plan.line1 then
      client.notify('nothing of proposal ' .. tostring(plan.proposal.proposalId) .. ' was kept to run',
        vim.log.levels.WARN)
      return nil
    end
    client.notify('running ' .. what)
    return run.run_code(doc.language(buf), doc.range_text(buf, plan.line1, plan.line2), 'kiln run: ' .. what,
      { textDocument = { uri = vim.uri_from_bufnr(buf) } })
  end
  return run.run_buffer(buf, opts.line1, opts.line2)
end

--- :KilnCancel: stop the run, or the intent being written.
function M.cancel()
  local run = require('kiln.run')
  if run.current then
    return run.cancel()
  end
  if require('kiln.intent').cancel(cur_buf()) then
    require('kiln.client').status_changed()
    return true
  end
  require('kiln.client').notify('nothing to cancel')
  return false
end

-- Send the intent; with setup{ session = true } a Python intent is
-- written for, and its proposal runs in, the session.
local function send_intent(opts)
  if config.options.session and require('kiln.doc').language(opts.buf or cur_buf()) == 'python' then
    local sid = require('kiln.session').ensure()
    if not sid then
      return nil
    end
    require('kiln.intent').session_id = sid
  end
  return require('kiln.intent').run(opts)
end

--- :KilnIntent: opts.text (prompted for when empty), opts.line1/line2.
function M.intent(opts)
  ensure_setup()
  opts = opts or {}
  if opts.text == nil or opts.text == '' then
    vim.ui.input({ prompt = 'kiln intent: ' }, function(text)
      if text and text ~= '' then
        opts.text = text
        send_intent(opts)
      end
    end)
    return nil
  end
  return send_intent(opts)
end

function M.accept() return require('kiln.intent').accept() end
function M.reject() return require('kiln.intent').reject() end
function M.accept_all() return require('kiln.intent').accept_all() end
function M.reject_all() return require('kiln.intent').reject_all() end

--- :KilnRestart / :KilnStop.
function M.stop()
  require('kiln.client').stop_sync()
end

function M.restart()
  ensure_setup()
  local client = require('kiln.client')
  client.stop_sync()
  local _, err = client.ensure()
  if err then
    client.notify(err, vim.log.levels.ERROR)
  end
end

--- What kiln is doing, as a table for a status line that builds its own
--- text: { state = 'idle' | 'thinking' | 'progress' | 'queued' | 'running' |
--- 'done', text (what status() shows), position (queued: 1 is next),
--- title, message, percentage (progress), summary (done: "exit 0, 48 ms",
--- "denied", ...) }.
function M.status_info()
  local ok, client = pcall(require, 'kiln.client')
  if not ok then
    return { state = 'idle', text = '' }
  end
  -- An intent's progress counts while its request is pending: the server
  -- need not end it after a cancel, or before it died.
  local intent = package.loaded['kiln.intent']
  local p
  for token, v in pairs(client.state.progress) do
    local b = tonumber(tostring(token):match('^kiln%-intent%-(%d+)$'))
    if not b or (intent and intent.pending[b]) then
      p = v
      break
    end
  end
  if not client.client() then
    p = nil
  end
  if p then
    local s = 'kiln:'
    if p.title and p.title ~= 'kiln' then
      s = s .. ' ' .. p.title
    end
    if p.message and p.message ~= '' then
      s = s .. ' ' .. p.message
    end
    if p.percentage then
      s = s .. (' %d%%'):format(p.percentage)
    end
    return { state = 'progress', text = s, title = p.title, message = p.message, percentage = p.percentage }
  end
  if intent and next(intent.pending) then
    return { state = 'thinking', text = 'kiln: thinking' }
  end
  local run = package.loaded['kiln.run']
  if run and run.current and run.current.queued then
    return { state = 'queued', position = run.current.queued,
      text = 'kiln: queued (' .. run.ordinal(run.current.queued) .. ')' }
  end
  if run and run.current then
    return { state = 'running', text = 'kiln: running' }
  end
  local done = run and run.done
  if done and compat.uv.now() - done.at < (config.options.status_done_ms or 0) then
    return { state = 'done', summary = done.summary, text = 'kiln: done (' .. done.summary .. ')' }
  end
  return { state = 'idle', text = '' }
end

--- A status line component: what kiln is doing, or '' when idle.
function M.status()
  return M.status_info().text
end

return M

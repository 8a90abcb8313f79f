-- kiln.client: the one kiln server of this Neovim instance. Started on first
-- use, stopped when Neovim exits; a server that dies is reported once and a
-- new one is started by the next command. Everything else talks to the
-- server through request() and the notification handlers registered here.
local compat = require('kiln.compat')
local config = require('kiln.config')

local M = {}

-- Notification handlers by method, filled by the feature modules
-- (run/output, intent/partial, ...).
local listeners = {}
-- Called with a reason when the server goes away, so that features can end
-- what was in flight.
local on_death = {}

local state = {
  id = nil,          -- LSP client id
  ready = false,     -- initialize answered
  init_result = nil, -- the initialize result
  stopping = false,  -- we asked it to stop: its exit is no news
  last_exit = nil,   -- { code, signal } of a server that died
  progress = {},     -- $/progress by token: { title, message, percentage, done }
}
M.state = state

local function notify(msg, level)
  level = level or vim.log.levels.INFO
  if state.collecting then
    -- A feature's own word about the death: the death's message says it.
    return
  end
  if level >= config.options.log_level then
    vim.notify('kiln: ' .. msg, level)
  end
end
M.notify = notify

--- Set the handler of a notification; returns the one it replaces.
function M.on(method, fn)
  local old = listeners[method]
  listeners[method] = fn
  return old
end

function M.on_death(fn)
  table.insert(on_death, fn)
end

local function dispatch(method)
  return function(err, result, ctx)
    local fn = listeners[method]
    if fn then
      fn(result, ctx, err)
    end
  end
end

-- $/progress: kept for the status line component, then handed to Neovim's
-- own handler so that LSP progress UIs (fidget, the LspProgress event) see it.
local function progress_handler(err, result, ctx, cfg)
  if result and result.token ~= nil and type(result.value) == 'table' then
    local v, key = result.value, tostring(result.token)
    local p = state.progress[key] or {}
    if v.kind == 'begin' then
      p = { title = v.title, message = v.message, percentage = v.percentage }
    elseif v.kind == 'report' then
      p.message = v.message or p.message
      p.percentage = v.percentage or p.percentage
    elseif v.kind == 'end' then
      p.done = true
      p.message = v.message or p.message
    end
    state.progress[key] = p
    if v.kind == 'end' then
      state.progress[key] = nil
    end
    pcall(vim.api.nvim_exec_autocmds, 'User', { pattern = 'KilnProgress', modeline = false })
    M.status_changed()
  end
  local default = vim.lsp.handlers['$/progress']
  if default then
    pcall(default, err, result, ctx, cfg)
  end
end

function M.client()
  local c = compat.get_client(state.id)
  if c and not compat.is_stopped(c) then
    return c
  end
  return nil
end

function M.running()
  return M.client() ~= nil and state.ready
end

--- The methods this server build serves (from initialize's
--- capabilities.experimental.methods); nil before initialize.
function M.methods()
  local r = state.init_result
  local exp = r and r.capabilities and r.capabilities.experimental
  return exp and exp.methods or nil
end

function M.supports(method)
  for _, m in ipairs(M.methods() or {}) do
    if m == method then
      return true
    end
  end
  return false
end

function M.server_info()
  return state.init_result and state.init_result.serverInfo or nil
end

function M.position_encoding()
  local caps = state.init_result and state.init_result.capabilities
  return caps and caps.positionEncoding or 'utf-16'
end

--- The status line changed: redraw it and tell User KilnStatus listeners
--- (a status line plugin that caches can refresh on it).
function M.status_changed()
  vim.schedule(function()
    pcall(vim.cmd, 'redrawstatus!')
    pcall(vim.api.nvim_exec_autocmds, 'User', { pattern = 'KilnStatus', modeline = false })
  end)
end

-- Neovim's own "Client N quit with exit code ..." warning for a kiln
-- server we already reported: swallowed once (it is scheduled by Neovim's
-- on_exit after ours), so a death is one message, one Press ENTER at most.
local function swallow_core_exit_message(id)
  local inner = vim.notify
  local done = false
  local function restore()
    if not done then
      done = true
      if vim.notify == M._filter then
        vim.notify = inner
      end
    end
  end
  M._filter = function(msg, level, opts)
    local who = type(msg) == 'string' and msg:match('^Client (%S+) quit with exit code')
    -- 0.7 names the client by id, 0.10 by name.
    if not done and (who == tostring(id) or who == 'kiln') then
      restore()
      return
    end
    return inner(msg, level, opts)
  end
  vim.notify = M._filter
  vim.defer_fn(restore, 2000)
end

local function handle_exit(code, signal, id)
  if id ~= state.id then
    return
  end
  local expected = state.stopping
  state.id, state.ready, state.init_result, state.stopping = nil, false, nil, false
  state.progress = {}
  local why = (signal and signal ~= 0) and ('signal ' .. signal) or ('code ' .. tostring(code))
  if not expected then
    state.last_exit = { code = code, signal = signal }
    swallow_core_exit_message(id)
  end
  -- The features end what was in flight; what they would say about it
  -- joins the one message about the death.
  vim.schedule(function()
    local said = {}
    local intent = package.loaded['kiln.intent']
    if intent and intent.pending and next(intent.pending) then
      table.insert(said, 'the intent')
    end
    state.collecting = said
    for _, fn in ipairs(on_death) do
      pcall(fn, expected and 'stopped' or 'the server exited')
    end
    state.collecting = nil
    if not expected then
      local msg = 'the server exited (' .. why .. ')'
      if #said > 0 then
        msg = msg .. '; ' .. table.concat(said, ', ') .. ' stopped'
      end
      notify(msg .. '; the next command starts a new one', vim.log.levels.ERROR)
    end
    M.status_changed()
  end)
end

--- While a death is reported: what was in flight (a run, an intent),
--- named in its one message; true when the death is being reported.
function M.dying(what)
  if state.collecting then
    if what then
      table.insert(state.collecting, what)
    end
    return true
  end
  return false
end

--- Start the server unless one is running. Returns the client or nil, err.
--- Does not wait for initialize; use ensure() for that.
function M.start()
  local c = M.client()
  if c then
    return c
  end
  local opts = config.options
  local exe = opts.cmd[1]
  if vim.fn.executable(exe) ~= 1 then
    return nil, "cannot find the server '" .. tostring(exe) ..
      "' (build it with `make`, put build/kiln on PATH, or set cmd in setup{})"
  end
  local env, env_err = config.server_env()
  if env_err then
    return nil, env_err
  end
  local init_options = config.init_options()
  if next(init_options) == nil then
    init_options = vim.empty_dict()
  end
  local handlers = {
    ['$/progress'] = progress_handler,
    ['run/output'] = dispatch('run/output'),
    ['run/artifact'] = dispatch('run/artifact'),
    ['run/display'] = dispatch('run/display'),
    ['run/status'] = dispatch('run/status'),
    ['intent/partial'] = dispatch('intent/partial'),
    ['intent/attempt'] = dispatch('intent/attempt'),
    ['intent/explanation'] = dispatch('intent/explanation'),
  }
  local capabilities = vim.lsp.protocol.make_client_capabilities()
  capabilities.general = capabilities.general or {}
  -- UTF-8 first: columns are then byte offsets, which is what the buffer API counts in.
  capabilities.general.positionEncodings = { 'utf-8', 'utf-16' }
  local id = compat.start_client({
    name = 'kiln',
    cmd = opts.cmd,
    cmd_env = env,
    root_dir = vim.fn.getcwd(),
    capabilities = capabilities,
    init_options = init_options,
    handlers = handlers,
    on_init = function(client, result)
      if client.id == state.id or state.id == nil then
        state.init_result = result
        state.ready = true
      end
    end,
    on_exit = handle_exit,
  })
  if not id then
    return nil, 'could not start ' .. table.concat(opts.cmd, ' ')
  end
  state.id = id
  state.ready = false
  state.stopping = false
  return M.client()
end

--- Start the server if needed and wait (bounded) until it is initialized.
function M.ensure(timeout_ms)
  local c, err = M.start()
  if not c then
    return nil, err
  end
  if not state.ready then
    vim.wait(timeout_ms or config.options.timeout_ms, function()
      return state.ready or M.client() == nil
    end, 10)
  end
  if not state.ready then
    return nil, 'the server did not answer initialize'
  end
  return M.client()
end

--- Send a request, starting the server if needed. handler(err, result).
--- Returns the request id, or nil after calling handler with the error.
function M.request(method, params, handler)
  local c, err = M.ensure()
  if not c then
    handler({ message = err }, nil)
    return nil
  end
  local ok, rid = compat.request(c, method, params, function(e, r)
    handler(e, r)
  end)
  if not ok then
    handler({ message = 'the server is not running' }, nil)
    return nil
  end
  return rid
end

--- Send a request and wait (bounded) for its answer: returns err, result.
function M.request_sync(method, params, timeout_ms)
  local done, e, r = false, nil, nil
  M.request(method, params, function(err, result)
    done, e, r = true, err, result
  end)
  if not vim.wait(timeout_ms or config.options.timeout_ms, function() return done end, 10) then
    return { message = method .. ' timed out' }, nil
  end
  return e, r
end

function M.cancel(rid)
  local c = M.client()
  if c and rid then
    compat.cancel_request(c, rid)
  end
end

--- Stop the server (shutdown, exit); force kills it.
function M.stop(force)
  local c = M.client()
  if not c then
    return
  end
  state.stopping = true
  compat.stop(c, force)
end

--- Stop and wait (bounded) until the process has gone.
function M.stop_sync(timeout_ms)
  local id = state.id
  if not id then
    return true
  end
  M.stop(false)
  local gone = vim.wait(timeout_ms or 3000, function() return state.id ~= id end, 10)
  if not gone then
    local c = compat.get_client(id)
    if c then
      compat.stop(c, true)
    end
    gone = vim.wait(1000, function() return state.id ~= id end, 10)
  end
  return gone
end

--- The server's pid, for :checkhealth and the crash test.
function M.pid()
  local c = M.client()
  if not c then
    return nil
  end
  if c.rpc and c.rpc.pid then
    return c.rpc.pid
  end
  -- Not exposed by every version: find the child of this Neovim that runs
  -- the server's executable.
  local want = compat.uv.fs_realpath(vim.fn.exepath(config.options.cmd[1]))
  for _, pid in ipairs(vim.api.nvim_get_proc_children(vim.fn.getpid())) do
    local exe = compat.uv.fs_readlink('/proc/' .. pid .. '/exe') or ''
    if exe == want then
      return pid
    end
  end
  return nil
end

return M

-- kiln.compat: the few places where Neovim 0.7 and 0.10+ differ, behind one
-- set of functions, so the rest of the plugin never tests versions.
-- Differences covered: starting an LSP client (vim.lsp.start_client vs
-- vim.lsp.start{attach=false}), dot vs colon client methods (0.11 deprecates
-- the dot form), running a process (jobstart vs vim.system), the health API
-- (require('health') vs vim.health) and a few renamed helpers.
local M = {}

local function has(v)
  return vim.fn.has('nvim-' .. v) == 1
end
M.has = has

M.uv = vim.uv or vim.loop
M.islist = vim.islist or vim.tbl_islist

-- Client methods became colon calls in 0.11; the dot form warns there.
local colon = has('0.11')

--- Start an LSP client that attaches to no buffer; returns its id or nil.
function M.start_client(config)
  if colon and vim.lsp.start then
    return vim.lsp.start(config, { attach = false, reuse_client = function() return false end })
  end
  return vim.lsp.start_client(config)
end

function M.get_client(id)
  return id and vim.lsp.get_client_by_id(id) or nil
end

--- Send a request; returns ok, request_id.
function M.request(client, method, params, handler)
  if colon then
    return client:request(method, params, handler)
  end
  return client.request(method, params, handler)
end

function M.notify(client, method, params)
  if colon then
    return client:notify(method, params)
  end
  return client.notify(method, params)
end

function M.cancel_request(client, id)
  if colon then
    return client:cancel_request(id)
  end
  return client.cancel_request(id)
end

function M.stop(client, force)
  if colon then
    return client:stop(force)
  end
  return client.stop(force)
end

function M.is_stopped(client)
  if colon then
    return client:is_stopped()
  end
  return client.is_stopped()
end

--- UTF-16 code units before byte index col of line (0.11 takes the
--- encoding as an argument).
function M.utf16_index(line, col)
  if has('0.11') then
    return vim.str_utfindex(line, 'utf-16', col, false)
  end
  local _, u16 = vim.str_utfindex(line, col)
  return u16
end

--- The byte index of UTF-16 column u16 of line.
function M.byte_index(line, u16)
  if has('0.11') then
    return vim.str_byteindex(line, 'utf-16', u16, false)
  end
  return vim.str_byteindex(line, u16, true)
end

--- Run a command to completion with a bound on its time.
--- Returns { code = n, stdout = s, stderr = s } (code 124 on time-out,
--- -1 when it could not start, with the reason in stderr).
function M.run(cmd, timeout_ms)
  timeout_ms = timeout_ms or 5000
  if vim.system then
    local ok, obj = pcall(vim.system, cmd, { text = true, timeout = timeout_ms })
    if not ok then
      return { code = -1, stdout = '', stderr = tostring(obj) }
    end
    local r = obj:wait()
    local code = r.code
    if r.signal and r.signal ~= 0 and code == 0 then
      code = 128 + r.signal
    end
    return { code = code, stdout = r.stdout or '', stderr = r.stderr or '' }
  end
  local out, err = {}, {}
  local done, code = false, nil
  local ok, job = pcall(vim.fn.jobstart, cmd, {
    stdout_buffered = true,
    stderr_buffered = true,
    on_stdout = function(_, data) out = data end,
    on_stderr = function(_, data) err = data end,
    on_exit = function(_, c) code = c; done = true end,
  })
  if not ok or job <= 0 then
    return { code = -1, stdout = '', stderr = 'cannot start ' .. tostring(cmd[1]) }
  end
  if not vim.wait(timeout_ms, function() return done end, 10) then
    vim.fn.jobstop(job)
    return { code = 124, stdout = table.concat(out, '\n'), stderr = 'timed out' }
  end
  -- jobstart's lists end with '' for the final newline.
  return { code = code, stdout = table.concat(out, '\n'), stderr = table.concat(err, '\n') }
end

--- The health reporter: vim.health (0.10: start/ok/warn/error/info; 0.8-0.9:
--- report_*) or require('health') on 0.7.
function M.health()
  local h = vim.health
  if h and h.start then
    return h
  end
  local old = h and h.report_start and h or require('health')
  return {
    start = old.report_start,
    ok = old.report_ok,
    warn = old.report_warn,
    error = old.report_error,
    info = old.report_info,
  }
end

--- Set buffer-local options (nvim_buf_set_option is deprecated in 0.10).
function M.set_buf(buf, opts)
  for k, v in pairs(opts) do
    vim.bo[buf][k] = v
  end
end

function M.set_win(win, opts)
  for k, v in pairs(opts) do
    vim.wo[win][k] = v
  end
end

return M

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

-- base64 (RFC 4648) decoding: vim.base64 from 0.10, this on 0.7.
local b64 = {}
do
  local alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'
  for i = 1, #alphabet do
    b64[alphabet:byte(i)] = i - 1
  end
end

--- The bytes of base64 text s, or nil, err when it is not base64.
function M.base64_decode(s)
  if vim.base64 and vim.base64.decode then
    local ok, out = pcall(vim.base64.decode, s)
    if ok then
      return out
    end
    return nil, tostring(out)
  end
  s = s:gsub('%s', '')
  if #s % 4 ~= 0 then
    return nil, 'not base64 (length)'
  end
  local out = {}
  for i = 1, #s, 4 do
    local n, pad = 0, 0
    for j = 0, 3 do
      local c = s:byte(i + j)
      local v = b64[c]
      if c == 61 then -- '='
        pad = pad + 1
        v = 0
      elseif v == nil or pad > 0 then
        return nil, 'not base64 (a character outside the alphabet)'
      end
      n = n * 64 + v
    end
    local a, b, c = math.floor(n / 65536) % 256, math.floor(n / 256) % 256, n % 256
    if pad == 0 then
      out[#out + 1] = string.char(a, b, c)
    elseif pad == 1 then
      out[#out + 1] = string.char(a, b)
    else
      out[#out + 1] = string.char(a)
    end
  end
  return table.concat(out)
end

--- Open path (a file) with the system's viewer: opener is a command list
--- (the path is added), a function(path), or nil for vim.ui.open where it
--- exists (0.10), else `open` on macOS and `xdg-open` elsewhere. Returns
--- true, or nil and a sentence (never raises).
function M.open_path(path, opener)
  if type(opener) == 'function' then
    local ok, err = pcall(opener, path)
    if not ok then
      return nil, 'the opener failed: ' .. tostring(err)
    end
    return true
  end
  if type(opener) == 'string' then
    opener = { opener }
  end
  if opener == nil and vim.ui and vim.ui.open then
    local ok, obj, err = pcall(vim.ui.open, path)
    if not ok then
      return nil, tostring(obj)
    end
    if not obj then
      return nil, tostring(err or 'vim.ui.open found no opener')
    end
    return true
  end
  local cmd = vim.deepcopy(opener or { vim.fn.has('mac') == 1 and 'open' or 'xdg-open' })
  if vim.fn.executable(cmd[1]) ~= 1 then
    return nil, ("no opener: '%s' is not an executable"):format(tostring(cmd[1]))
  end
  table.insert(cmd, path)
  local ok, job = pcall(vim.fn.jobstart, cmd, { detach = true })
  if not ok or job <= 0 then
    return nil, 'cannot start ' .. tostring(cmd[1]) .. (ok and '' or (': ' .. tostring(job)))
  end
  return true
end

return M

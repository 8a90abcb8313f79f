-- kiln.session: the Python session of this Neovim instance (session/open),
-- used when setup{ session = true }: Python runs and intents go into one
-- live namespace, as a notebook's kernel keeps one, and its displays
-- (run/display: values, tables, figures) come back. Opened on first use,
-- forgotten when the server goes away; :KilnSessionReset starts it afresh.
local client = require('kiln.client')

local M = {}

-- The server's session id ("s1"), or nil.
M.id = nil

client.on_death(function()
  M.id = nil
end)

--- The session's id, opening it if needed; nil (and a message) when the
--- server cannot open one.
function M.ensure()
  if M.id then
    return M.id
  end
  local err, r = client.request_sync('session/open', { language = 'python' })
  if err or type(r) ~= 'table' or type(r.sessionId) ~= 'string' then
    client.notify('cannot open a session: ' .. tostring(err and err.message or vim.inspect(r)),
      vim.log.levels.ERROR)
    return nil
  end
  M.id = r.sessionId
  return M.id
end

--- Forget everything the session holds (session/reset); also brings back
--- a session that has ended.
function M.reset()
  if not M.id then
    client.notify('no session is open')
    return false
  end
  local err = client.request_sync('session/reset', { sessionId = M.id })
  if err then
    client.notify('session reset: ' .. tostring(err.message), vim.log.levels.ERROR)
    return false
  end
  client.notify('the session starts afresh')
  return true
end

return M

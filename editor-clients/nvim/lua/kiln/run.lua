-- kiln.run: :KilnRun and :KilnCancel. A run is snippet/run (code from the
-- buffer or a selection) or intent/approve (a proposal); either streams
-- run/output notifications into the output window and ends with a result
-- carrying the exit status, duration and artifacts. One run at a time.
local client = require('kiln.client')
local config = require('kiln.config')
local doc = require('kiln.doc')
local output = require('kiln.output')

local M = {}

-- The run in flight: { rid, started, kind }, or nil. `last` keeps the
-- previous run's result for the status line, tests and :KilnArtifact.
M.current = nil
M.last = nil

local function chunk_text(p)
  return p.text or p.data or p.chunk or p.output or ''
end

client.on('run/output', function(p)
  if not M.current or type(p) ~= 'table' then
    return
  end
  output.append(p.stream == 'stderr' and 'stderr' or 'stdout', chunk_text(p))
end)

-- run/artifact: a file the program wrote under /work/out.
client.on('run/artifact', function(p)
  if not M.current or type(p) ~= 'table' then
    return
  end
  M.current.artifacts = M.current.artifacts or {}
  table.insert(M.current.artifacts, p)
  local n = #M.current.artifacts
  local where = p.path or (p.omitted and ('not copied: ' .. p.omitted)) or ''
  output.note(('artifact %d: %s (%s, %s bytes) %s  [:KilnArtifact %d opens it]'):format(n,
    tostring(p.name), tostring(p.mimeType), tostring(p.size), where, n), 'Directory')
end)

client.on('intent/explanation', function(p)
  if M.current and type(p) == 'table' and type(p.text) == 'string' then
    output.append('explain', p.text)
  end
end)

client.on('intent/attempt', function(p)
  if type(p) ~= 'table' then
    return
  end
  -- Stages: running, ran {ok, failure}, repairing, repaired {verdict,
  -- code}, repair_failed {error}.
  local n = p.attempt or '?'
  local what = tostring(p.stage or '')
  local extra = ''
  if type(p.verdict) == 'string' then
    extra = ' (verdict ' .. p.verdict .. ')'
  elseif p.ok == false and type(p.failure) == 'string' then
    extra = ': ' .. p.failure
  elseif type(p.error) == 'string' then
    extra = ': ' .. p.error
  end
  output.note(('-- attempt %s %s%s --'):format(tostring(n), what:gsub('_', ' '), extra),
    p.ok == true and 'Comment' or 'WarningMsg')
  if type(p.code) == 'string' then
    -- The repaired code, so what runs next is seen before it runs.
    for _, l in ipairs(vim.split(p.code:gsub('\n$', ''), '\n', { plain = true })) do
      output.note('  | ' .. l, 'Comment')
    end
  end
  if M.current then
    M.current.attempts = (M.current.attempts or 0) + 1
  end
  -- The review follows the repaired proposal (kiln.intent owns the review).
  if p.stage == 'repaired' and type(p.proposal) == 'table' and M.current and M.current.buf then
    require('kiln.intent').follow_repair(M.current.buf, p.proposal)
  end
end)

client.on_death(function(reason)
  if M.current then
    output.note('[' .. reason .. ']', 'ErrorMsg')
    M.last = { error = { message = reason } }
    M.current = nil
  end
end)

local function summary(r)
  local parts = {}
  if r.timedOut or r.timed_out then
    table.insert(parts, 'timed out')
  end
  if r.signal and r.signal ~= 0 and r.signal ~= vim.NIL then
    table.insert(parts, 'killed by signal ' .. tostring(r.signal))
  end
  local code = r.exitCode or r.exit_code or r.status
  if code ~= nil and code ~= vim.NIL then
    table.insert(parts, 'exit ' .. tostring(code))
  end
  local ms = r.durationMs or r.duration_ms
  if ms then
    table.insert(parts, ('%.0f ms'):format(ms))
  end
  if r.cancelled then
    table.insert(parts, 'cancelled')
  end
  return table.concat(parts, ', ')
end

local function finish(err, result)
  local cur = M.current
  M.current = nil
  if err then
    local msg = err.message or 'error'
    if type(err.data) == 'table' and err.data.kind == 'denied' then
      -- Say which rules refused it and which setting decides (kiln.intent).
      msg = require('kiln.intent').denied_message(err.data.diagnostics, 'this code')
      client.notify(msg, vim.log.levels.ERROR)
    end
    output.note('[' .. msg .. ']', 'ErrorMsg')
    M.last = { error = err }
    return
  end
  result = result or {}
  -- intent/approve answers { ok, result (the last run), attempts, ... }.
  local run = result.attempts and result.result or result
  if run == vim.NIL or type(run) ~= 'table' then
    run = {}
  end
  output.note('[' .. summary(run) .. ']', (run.exitCode == 0) and 'Comment' or 'WarningMsg')
  if result.stopped and result.stopped ~= vim.NIL then
    output.note('[stopped: ' .. tostring(result.stopped) .. ']', 'WarningMsg')
  end
  if type(result.proposal) == 'table' then
    output.note('[the repaired code needs your approval (verdict ' .. tostring(result.proposal.verdict) ..
      '): :KilnRun runs it]', 'WarningMsg')
    if cur and cur.buf and vim.api.nvim_buf_is_valid(cur.buf) then
      require('kiln.intent').follow_repair(cur.buf, result.proposal)
    end
  end
  M.last = { result = result, run = run, attempts = cur and cur.attempts,
    artifacts = cur and cur.artifacts or {} }
end

-- Send the request; its answer ends the run unless the run ended already
-- (cancelled: Neovim 0.10 drops the cancelled request's answer anyway).
local function start(method, params, cur)
  M.current = cur
  local rid = client.request(method, params, function(err, result)
    if M.current == cur then
      finish(err, result)
    end
  end)
  cur.rid = rid
  return rid
end

--- Run code (a string) as language; header names what runs.
function M.run_code(language, code, header, extra)
  if M.current then
    client.notify('a run is in progress (:KilnCancel stops it)', vim.log.levels.WARN)
    return nil
  end
  output.clear(header)
  output.open()
  local params = vim.tbl_extend('force', { language = language, code = code }, extra or {})
  return start('snippet/run', params, { kind = 'snippet' })
end

--- Approve and run a proposal (intent/approve) made for buf at version.
function M.approve(proposal_id, header, buf, version)
  if M.current then
    client.notify('a run is in progress (:KilnCancel stops it)', vim.log.levels.WARN)
    return nil
  end
  output.clear(header)
  output.open()
  local params = { proposalId = proposal_id, explain = config.options.explain and true or false }
  if buf and version then
    params.textDocument = { uri = vim.uri_from_bufnr(buf), version = version }
  end
  local n = config.options.repair_attempts or 0
  if n > 0 then
    params.repair = { maxAttempts = n }
  end
  return start('intent/approve', params, { kind = 'proposal', attempts = 0, buf = buf })
end

--- Run a buffer, or lines line1..line2 of it, as code.
function M.run_buffer(buf, line1, line2)
  local code = line1 and doc.range_text(buf, line1, line2) or doc.text(buf)
  local name = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(buf), ':t')
  local header = ('kiln run: %s%s'):format(name ~= '' and name or '[buffer]',
    line1 and (':' .. line1 .. '-' .. line2) or '')
  return M.run_code(doc.language(buf), code, header, { textDocument = { uri = vim.uri_from_bufnr(buf) } })
end

function M.cancel()
  if not M.current then
    client.notify('nothing is running')
    return false
  end
  -- The server kills the run when it reads $/cancelRequest; the run ends
  -- here at once, whatever it answers.
  client.cancel(M.current.rid)
  M.current = nil
  output.note('[cancelled]', 'WarningMsg')
  M.last = { error = { message = 'cancelled' }, cancelled = true }
  return true
end

--- Open artifact n of the last run with the system viewer.
function M.open_artifact(n)
  local a = M.last and M.last.artifacts and M.last.artifacts[n or 1]
  local path = a and a.path
  if not path and a and a.data and vim.base64 then
    -- Only the bytes came back (no shared path): write them out first.
    path = vim.fn.tempname() .. '-' .. tostring(a.name or 'artifact'):gsub('[^%w._-]', '_')
    local f = io.open(path, 'wb')
    if f then
      f:write(vim.base64.decode(a.data))
      f:close()
    end
  end
  if not path then
    client.notify('no such artifact (or it was not copied)', vim.log.levels.WARN)
    return
  end
  local opener = vim.fn.has('mac') == 1 and 'open' or 'xdg-open'
  vim.fn.jobstart({ opener, path }, { detach = true })
end

return M

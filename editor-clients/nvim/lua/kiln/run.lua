-- kiln.run: :KilnRun and :KilnCancel. A run is snippet/run (code from the
-- buffer or a selection) or intent/approve (a proposal); either streams
-- run/output notifications into the output window and ends with a result
-- carrying the exit status, duration and artifacts. One run at a time.
local client = require('kiln.client')
local config = require('kiln.config')
local doc = require('kiln.doc')
local output = require('kiln.output')
local history = require('kiln.history')
local compat = require('kiln.compat')

local M = {}

-- The run in flight: { rid, started, kind, queued (its place in the
-- server's queue while it waits for a slot) }, or nil. `last` keeps the
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

--- 1 -> '1st', 2 -> '2nd', 11 -> '11th', ...
function M.ordinal(n)
  n = math.floor(tonumber(n) or 0)
  local suffix = 'th'
  if n % 100 < 11 or n % 100 > 13 then
    suffix = ({ 'st', 'nd', 'rd' })[n % 10] or 'th'
  end
  return n .. suffix
end

-- run/status: every sandbox slot is taken (sandbox.maxConcurrentRuns), so
-- the run waits in the server's queue before its box is built. Without
-- this a queued run looks hung: the output window and the status line say
-- so, then say when it starts. One run at a time here, so a status is the
-- current run's unless it names another run id.
client.on('run/status', function(p)
  local cur = M.current
  if not cur or type(p) ~= 'table' then
    return
  end
  if cur.run_id and p.runId and p.runId ~= cur.run_id then
    return
  end
  cur.run_id = cur.run_id or p.runId
  if p.state == 'queued' then
    cur.queued = tonumber(p.position) or 1
    output.note(('[queued: %s in line for a sandbox slot; %s of %s busy]'):format(M.ordinal(cur.queued),
      tostring(p.running or '?'), tostring(p.maxConcurrentRuns or '?')), 'WarningMsg')
  elseif p.state == 'running' and cur.queued then
    cur.queued = nil
    output.note('[running: a slot is free]', 'Comment')
  end
  client.status_changed()
end)

-- Where a run's files go: a folder per run under output.save_dir.
local function save(cur, name, bytes)
  if not cur.dir then
    local root = config.options.output.save_dir or (vim.fn.stdpath('cache') .. '/kiln/runs')
    cur.dir = ('%s/%s-%d-%s'):format(root, os.date('%Y%m%d-%H%M%S'), vim.fn.getpid(),
      (tostring(cur.run_id or 'run'):gsub('[^%w_-]', '_')))
    vim.fn.mkdir(cur.dir, 'p')
  end
  local path = cur.dir .. '/' .. tostring(name):gsub('[^%w._-]', '_')
  local f, err = io.open(path, 'wb')
  if not f then
    return nil, err
  end
  f:write(bytes)
  f:close()
  return path
end

local function is_text(mime)
  mime = tostring(mime or '')
  return mime:find('^text/') ~= nil or mime == 'application/json' or mime == 'application/csv'
end

-- Small text files are shown in the output window, at most this much.
local SHOW_TEXT_BYTES, SHOW_TEXT_LINES = 4096, 20

local function show_text(bytes)
  local lines = vim.split((bytes:gsub('\n$', '')), '\n', { plain = true })
  local more = #lines - SHOW_TEXT_LINES
  if more > 0 then
    lines = vim.list_slice(lines, 1, SHOW_TEXT_LINES)
  end
  for i, l in ipairs(lines) do
    lines[i] = '  | ' .. l
  end
  if more > 0 then
    table.insert(lines, ('  | ... %d more line%s in the file'):format(more, more == 1 and '' or 's'))
  end
  output.lines_note(lines, 'Normal')
end

-- run/artifact: a file the program wrote under /work/out. Inline bytes are
-- decoded and saved (on 0.7 too); the saved path is shown, and a small
-- text file's content.
client.on('run/artifact', function(p)
  local cur = M.current
  if not cur or type(p) ~= 'table' then
    return
  end
  cur.run_id = cur.run_id or p.runId
  cur.artifacts = cur.artifacts or {}
  local item = { kind = 'artifact', name = p.name, mimeType = p.mimeType, size = p.size, path = p.path,
    omitted = p.omitted }
  local bytes
  if type(p.data) == 'string' then
    local err
    bytes, err = compat.base64_decode(p.data)
    if bytes then
      item.path, err = save(cur, p.name, bytes)
    end
    item.error = err
  end
  table.insert(cur.artifacts, item)
  local n = #cur.artifacts
  local where = item.path and ('saved to ' .. item.path) or
    ('not saved: ' .. tostring(item.omitted or item.error or 'no data'))
  output.note(('artifact %d: %s (%s, %s bytes) %s  [:KilnArtifact %d opens it]'):format(n,
    tostring(p.name), tostring(p.mimeType), tostring(p.size), where, n), 'Directory')
  if bytes and is_text(p.mimeType) and #bytes <= SHOW_TEXT_BYTES then
    show_text(bytes)
  end
end)

-- run/display (a session's rich output, a Jupyter MIME bundle): the text
-- goes into the output window as the program's own output would; an image
-- or an HTML table is saved and listed, to open with :KilnArtifact.
local rich = {
  { 'image/png', 'png', true }, { 'image/jpeg', 'jpg', true }, { 'image/svg+xml', 'svg' },
  { 'text/html', 'html' },
}
client.on('run/display', function(p)
  local cur = M.current
  if not cur or type(p) ~= 'table' or type(p.data) ~= 'table' then
    return
  end
  cur.run_id = cur.run_id or p.runId
  cur.artifacts = cur.artifacts or {}
  cur.displays = (cur.displays or 0) + 1
  local d = p.data
  for _, r in ipairs(rich) do
    local mime, ext, b64 = r[1], r[2], r[3]
    if type(d[mime]) == 'string' then
      local bytes, err = d[mime], nil
      if b64 then
        bytes, err = compat.base64_decode(bytes)
      end
      local item = { kind = 'display', name = ('display-%d.%s'):format(cur.displays, ext), mimeType = mime }
      if bytes then
        item.size = #bytes
        item.path, err = save(cur, item.name, bytes)
      end
      item.error = err
      table.insert(cur.artifacts, item)
      local n = #cur.artifacts
      output.note(('display %d: %s (%s bytes) %s  [:KilnArtifact %d opens it]'):format(cur.displays, mime,
        tostring(item.size or '?'), item.path and ('saved to ' .. item.path) or ('not saved: ' .. tostring(err)),
        n), 'Directory')
      break
    end
  end
  local text = d['text/plain']
  if type(text) ~= 'string' then
    text = type(d['text/markdown']) == 'string' and d['text/markdown']
      or d['application/json'] ~= nil and vim.fn.json_encode(d['application/json']) or nil
  end
  if text then
    output.append('stdout', (text:gsub('\n?$', '\n', 1)))
  end
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
  if p.stage == 'repaired' then
    history.record_proposal_id(p.proposalId)
  end
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

-- Traceback lines that name the snippet's file: Python's `File
-- "/code/snippet.py", line N` (or `File "<r3>"` in a session), bash's
-- `/code/snippet.sh: line N:` and node's `/code/snippet.js:N`.
local trace_patterns = {
  'File "/code/snippet%.%w+", line (%d+)',
  'File "<r%d+>", line (%d+)',
  '/code/snippet%.%w+: line (%d+)',
  '/code/snippet%.%w+:(%d+)',
}

-- A run of a buffer (or of lines of it): each traceback line of its
-- section gets the buffer line it names, and <CR> there jumps to it.
local function link_tracebacks(cur)
  if not (cur and cur.map and vim.api.nvim_buf_is_valid(cur.map.buf)) then
    return
  end
  local lines = output.section_lines()
  local first = vim.api.nvim_buf_line_count(output.buf()) - #lines
  local name = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(cur.map.buf), ':t')
  if name == '' then
    name = 'buffer ' .. cur.map.buf
  end
  cur.links = {}
  for i, l in ipairs(lines) do
    for _, pat in ipairs(trace_patterns) do
      local n = tonumber(l:match(pat))
      if n then
        if n >= 1 and n <= cur.map.count then
          local lnum = cur.map.line1 + n - 1
          output.link(first + i - 1, cur.map.buf, lnum, ('  -> %s:%d (<CR> jumps)'):format(name, lnum))
          table.insert(cur.links, lnum)
        end
        break
      end
    end
  end
end

client.on_death(function(reason)
  if M.current then
    client.dying('the run')
    output.note('[' .. reason .. ']', 'ErrorMsg')
    link_tracebacks(M.current)
    M.last = { error = { message = reason } }
    M.current, M.done = nil, nil
    history.record_end()
    client.status_changed()
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

-- The run just ended: status() says "kiln: done (SUMMARY)" for
-- status_done_ms, then goes idle (a redraw then says so).
local function set_done(summary_text)
  M.done = { at = compat.uv.now(), summary = summary_text ~= '' and summary_text or 'ended' }
  local ms = config.options.status_done_ms or 0
  if ms > 0 then
    vim.defer_fn(client.status_changed, ms + 20)
  end
end

local function finish(err, result)
  local cur = M.current
  M.current = nil
  client.status_changed()
  if err then
    local msg = err.message or 'error'
    local denied = type(err.data) == 'table' and err.data.kind == 'denied'
    -- Code of the person's own (snippet/run) may run anyway where the
    -- server allows it (validator.allowOverride); a proposal never does.
    local own = denied and cur and cur.kind == 'snippet' and not cur.params.override
    local offer = own and err.data.overrideAllowed == true
    if denied then
      -- Say which rules refused it and which setting decides (kiln.intent).
      msg = require('kiln.intent').denied_message(err.data.diagnostics, 'this code',
        { override = own, override_allowed = offer })
      client.notify(msg, vim.log.levels.ERROR)
    end
    output.note('[' .. msg .. ']', 'ErrorMsg')
    M.last = { error = err }
    set_done(denied and 'denied' or 'failed')
    history.record_end()
    if offer then
      vim.schedule(function() M.offer_override(cur, err.data.diagnostics) end)
    end
    return
  end
  result = result or {}
  -- intent/approve answers { ok, result (the last run), attempts, ... }.
  local run = result.attempts and result.result or result
  if run == vim.NIL or type(run) ~= 'table' then
    run = {}
  end
  output.note('[' .. summary(run) .. ']', (run.exitCode == 0) and 'Comment' or 'WarningMsg')
  set_done(summary(run))
  if run.sessionEnded == true then
    output.note('[the session ended: ' .. tostring(run.sessionEndReason) ..
      '; :KilnSessionReset starts a fresh one]', 'WarningMsg')
  end
  if result.stopped and result.stopped ~= vim.NIL then
    output.note('[stopped: ' .. tostring(result.stopped) .. ']', 'WarningMsg')
  end
  if type(result.proposal) == 'table' then
    -- A repair is a new proposal: it ran only if automatic repair let it.
    output.note('[the repaired code ' .. tostring(result.proposal.proposalId) ..
      ' did not run: it needs your approval (verdict ' .. tostring(result.proposal.verdict) ..
      '): review it, then :KilnRun runs it]', 'WarningMsg')
    if cur and cur.buf and vim.api.nvim_buf_is_valid(cur.buf) then
      require('kiln.intent').follow_repair(cur.buf, result.proposal)
    end
  end
  local ws = require('kiln.changes').record(run)
  if ws then
    output.lines_note(ws, 'WarningMsg')
  end
  link_tracebacks(cur)
  M.last = { result = result, run = run, attempts = cur and cur.attempts,
    artifacts = cur and cur.artifacts or {}, links = cur and cur.links }
  history.record_ledger(run, type(result.attempts) == 'table' and #result.attempts or result.attempts)
  history.record_end()
end

-- Send the request; its answer ends the run unless the run ended already
-- (cancelled: Neovim 0.10 drops the cancelled request's answer anyway).
local function start(method, params, cur)
  M.current = cur
  M.done = nil
  client.status_changed()
  local rid = client.request(method, params, function(err, result)
    if M.current == cur then
      finish(err, result)
    end
  end)
  cur.rid = rid
  return rid
end

--- Run code (a string) as language; header names what runs.
function M.run_code(language, code, header, extra, map)
  if M.current then
    client.notify('a run is in progress (:KilnCancel stops it)', vim.log.levels.WARN)
    return nil
  end
  output.clear(header)
  output.open()
  history.record_run((header:gsub('^kiln run: ', 'run: ')), code)
  local params = vim.tbl_extend('force', { language = language, code = code }, extra or {})
  return start('snippet/run', params, { kind = 'snippet', map = map, params = params, header = header })
end

--- After a refusal the server would override (data.overrideAllowed): name
--- every rule again and ask, once, whether to run the code anyway; yes
--- sends it again with "override": true, and the output's header says so.
function M.offer_override(cur, diags)
  local errors = require('kiln.intent').denied_rules(diags)
  local yes, no = 'Run it anyway', 'Do not run it'
  vim.ui.select({ yes, no }, {
    prompt = ('kiln: the validator denied this code: %s. Run it anyway in the sandbox?'):format(
      #errors > 0 and table.concat(errors, '; ') or 'see its diagnostics'),
  }, function(choice)
    if choice ~= yes then
      client.notify('not run: the code the validator denied stays unrun')
      return
    end
    local extra = vim.deepcopy(cur.params)
    extra.override = true
    local header = cur.header .. ' (run anyway: you overrode the validator)'
    return M.run_code(extra.language, extra.code, header, extra, cur.map)
  end)
end

--- Approve and run a proposal (intent/approve) made for buf at version.
function M.approve(proposal_id, header, buf, version)
  if M.current then
    client.notify('a run is in progress (:KilnCancel stops it)', vim.log.levels.WARN)
    return nil
  end
  output.clear(header)
  output.open()
  history.record_run('proposal ' .. tostring(proposal_id), nil, proposal_id)
  local params = { proposalId = proposal_id, explain = config.options.explain and true or false }
  if buf and version then
    params.textDocument = { uri = vim.uri_from_bufnr(buf), version = version }
  end
  local n = config.options.repair_attempts or 0
  if n > 0 then
    params.repair = { maxAttempts = n }
    if config.options.auto_repair then
      params.repair.auto = true
    end
  end
  return start('intent/approve', params, { kind = 'proposal', attempts = 0, buf = buf })
end

--- Run a buffer, or lines line1..line2 of it, as code.
function M.run_buffer(buf, line1, line2)
  local code = line1 and doc.range_text(buf, line1, line2) or doc.text(buf)
  local name = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(buf), ':t')
  local header = ('kiln run: %s%s'):format(name ~= '' and name or '[buffer]',
    line1 and (':' .. line1 .. '-' .. line2) or '')
  -- Where the code's line 1 is in the buffer, for its tracebacks.
  local map = { buf = buf, line1 = line1 or 1,
    count = line1 and (line2 - line1 + 1) or vim.api.nvim_buf_line_count(buf) }
  local extra = { textDocument = { uri = vim.uri_from_bufnr(buf) } }
  local language = doc.language(buf)
  if config.options.session and language == 'python' then
    extra.sessionId = require('kiln.session').ensure()
    if not extra.sessionId then
      return nil
    end
  end
  return M.run_code(language, code, header, extra, map)
end

function M.cancel()
  if not M.current then
    client.notify('nothing is running')
    return false
  end
  -- The server kills the run when it reads $/cancelRequest; the run ends
  -- here at once, whatever it answers.
  client.cancel(M.current.rid)
  M.current, M.done = nil, nil
  client.status_changed()
  output.note('[cancelled]', 'WarningMsg')
  history.record_end()
  M.last = { error = { message = 'cancelled' }, cancelled = true }
  return true
end

--- Open artifact (or display) n of the last run with the opener
--- (setup{ open_cmd }: vim.ui.open where it exists, else xdg-open/open).
--- A missing opener is a message, never an error.
function M.open_artifact(n)
  local list = (M.current and M.current.artifacts) or (M.last and M.last.artifacts) or {}
  local a = list[n or 1]
  if not a then
    client.notify(('no artifact %d (the last run has %d)'):format(n or 1, #list), vim.log.levels.WARN)
    return false
  end
  if not a.path then
    client.notify(('artifact %d was not saved: %s'):format(n or 1, tostring(a.omitted or a.error or 'no data')),
      vim.log.levels.WARN)
    return false
  end
  local ok, err = compat.open_path(a.path, config.options.open_cmd)
  if not ok then
    client.notify(('cannot open %s: %s (set open_cmd in setup{}; the file stays there)'):format(a.path,
      tostring(err)), vim.log.levels.WARN)
    return false
  end
  return true
end

return M

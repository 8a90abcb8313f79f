-- kiln.changes: the files a run created, changed or deleted in the
-- workspace (the result's workspaceChanges, with the workspaceEdit's text
-- for showing), offered for review like a proposal: :KilnChanges lists
-- them (binary ones with their size and kind), <CR> shows a file's new
-- content, ":KilnChanges apply" asks kiln to write them and
-- ":KilnChanges discard" declines them (workspace/declineChanges: a live
-- session drops them from its layer). Nothing is written but on that
-- command, and always by kiln (workspace/applyChanges), text and binary
-- alike: kiln checks each file against what the host held when the run
-- started and skips one changed since, and the plugin reports each skip
-- with kiln's reason. A file open and modified in a buffer is not sent.
local client = require('kiln.client')
local compat = require('kiln.compat')
local scratch = require('kiln.scratch')

local M = {}

-- The last run's offer: { run_id, workspace, files = { {path, kind, size,
-- text?, in_edit, binary, mime, stored, not_kept, recursive, state?,
-- reason?} }, omitted, applying, declining }, or nil. A file's state is nil
-- until an apply, then 'applied' or 'skipped' (with kiln's reason); after a
-- discard, 'declined' or 'kept' (the session still holds it, with why).
M.offer = nil
local list_buf = nil

local function rel(o, path)
  local w = o.workspace
  if w and path:sub(1, #w + 1) == w .. '/' then
    return path:sub(#w + 2)
  end
  return path
end

local function str(v)
  return type(v) == 'string' and v or nil
end

--- A run ended with result run: keep its workspace changes for review and
--- return the lines that say so (nil when it changed nothing).
function M.record(run)
  local changes = run and run.workspaceChanges
  if type(changes) ~= 'table' or #changes == 0 then
    return nil
  end
  local o = { run_id = run.runId, workspace = str(run.workspace), files = {},
    omitted = tonumber(run.workspaceChangesOmitted) }
  local texts = {}
  local edit = type(run.workspaceEdit) == 'table' and run.workspaceEdit.documentChanges or {}
  for _, dc in ipairs(type(edit) == 'table' and edit or {}) do
    if type(dc.textDocument) == 'table' and type(dc.edits) == 'table' then
      local t = {}
      for _, e in ipairs(dc.edits) do
        table.insert(t, e.newText or '')
      end
      texts[vim.uri_to_fname(dc.textDocument.uri)] = table.concat(t)
    end
  end
  for _, c in ipairs(changes) do
    local path = tostring(c.path)
    table.insert(o.files, { path = path, kind = tostring(c.kind), size = c.size, in_edit = c.inEdit == true,
      text = texts[path], directory = c.directory == true, binary = c.binary == true, mime = str(c.mimeType),
      stored = str(c.stored), not_kept = str(c.notKept) })
  end
  M.offer = o
  local lines = { ('[the run changed %d file%s in the workspace; nothing is written: :KilnChanges reviews them]')
    :format(#o.files, #o.files == 1 and '' or 's') }
  for _, f in ipairs(o.files) do
    local s = ('  %-8s %s'):format(f.kind, rel(o, f.path))
    if f.binary then
      s = s .. (' (%s bytes, %s)'):format(tostring(f.size), f.mime or 'binary')
    end
    if f.not_kept then
      s = s .. ' [not kept: ' .. f.not_kept .. ']'
    end
    table.insert(lines, s)
  end
  if list_buf and vim.api.nvim_buf_is_valid(list_buf) then
    M.render()
  end
  return lines
end

local function describe(o, f)
  local s = ('%-8s %s'):format(f.kind, rel(o, f.path))
  if f.kind ~= 'deleted' then
    if f.binary then
      s = s .. (' (%s bytes, %s, binary)'):format(tostring(f.size), f.mime or 'application/octet-stream')
    else
      s = s .. (' (%s bytes)'):format(tostring(f.size))
    end
  end
  if f.not_kept then
    s = s .. ' [not kept, cannot be applied: ' .. f.not_kept .. ']'
  end
  if f.state == 'applied' then
    s = s .. ' [applied]'
  elseif f.state == 'skipped' then
    s = s .. ' [skipped: ' .. tostring(f.reason) .. ']'
  elseif f.state == 'declined' then
    s = s .. ' [discarded: dropped by kiln]'
  elseif f.state == 'kept' then
    s = s .. ' [discarded, but the session still holds it: ' .. tostring(f.reason) .. ']'
  end
  return s
end

-- How many of o's files are applied, skipped, and discarded (declined or
-- kept by the session).
local function tally(o)
  local applied, skipped, discarded = 0, 0, 0
  for _, f in ipairs(o.files) do
    if f.state == 'applied' then
      applied = applied + 1
    elseif f.state == 'skipped' then
      skipped = skipped + 1
    elseif f.state == 'declined' or f.state == 'kept' then
      discarded = discarded + 1
    end
  end
  return applied, skipped, discarded
end

-- The list buffer's lines: a header, one line per file (row 3 on), a
-- footer with the keys.
function M.render()
  local o = M.offer
  local lines
  if not o then
    lines = { 'kiln: no workspace changes to review' }
  else
    local applied, skipped, discarded = tally(o)
    local state = (applied + skipped == 0) and 'not applied'
      or ('%d applied, %d skipped'):format(applied, skipped)
    if discarded > 0 then
      state = state .. (', %d discarded'):format(discarded)
    end
    lines = { ('kiln: run %s changed %s (%s)'):format(tostring(o.run_id), tostring(o.workspace), state), '' }
    for _, f in ipairs(o.files) do
      table.insert(lines, describe(o, f))
    end
    if o.omitted and o.omitted > 0 then
      table.insert(lines, ('... and %d more, not listed (not applied)'):format(o.omitted))
    end
    vim.list_extend(lines, { '', '<CR> shows the new content; :KilnChanges apply has kiln write them',
      '(a file changed since the run is skipped); :KilnChanges discard declines them' })
  end
  vim.bo[list_buf].modifiable = true
  vim.api.nvim_buf_set_lines(list_buf, 0, -1, false, lines)
  vim.bo[list_buf].modifiable = false
end

--- :KilnChanges: the list of the last run's changes, in a split.
function M.open()
  if not (list_buf and vim.api.nvim_buf_is_valid(list_buf)) then
    list_buf = scratch.buf('kiln://changes', { modifiable = false })
    vim.keymap.set('n', '<CR>', function() M.show(vim.api.nvim_win_get_cursor(0)[1] - 2) end,
      { buffer = list_buf, desc = "kiln: show this file's new content" })
  end
  M.render()
  local w = vim.fn.bufwinid(list_buf)
  if w == -1 then
    vim.cmd('botright 12split')
    vim.api.nvim_win_set_buf(0, list_buf)
    w = vim.api.nvim_get_current_win()
  end
  vim.api.nvim_set_current_win(w)
  return list_buf
end

--- Show file n's new content in a scratch buffer (kiln://changes/PATH).
function M.show(n)
  local o = M.offer
  local f = o and o.files[n]
  if not f then
    return nil
  end
  if f.kind == 'deleted' or not f.text then
    local what
    if f.kind == 'deleted' then
      what = ' is deleted by the run'
    elseif f.binary then
      what = (' is binary (%s, %s bytes)'):format(f.mime or 'application/octet-stream', tostring(f.size)) ..
        (f.stored and ('; kiln keeps its new content in ' .. f.stored)
          or ('; kiln kept no copy: ' .. tostring(f.not_kept)))
    else
      what = ' has no text to show'
    end
    client.notify(rel(o, f.path) .. what)
    return nil
  end
  local name = 'kiln://changes/' .. rel(o, f.path)
  local b = vim.fn.bufnr(name)
  if b == -1 then
    b = vim.api.nvim_create_buf(false, true)
    pcall(vim.api.nvim_buf_set_name, b, name)
  end
  compat.set_buf(b, { buftype = 'nofile', bufhidden = 'wipe', swapfile = false, modifiable = true })
  vim.api.nvim_buf_set_lines(b, 0, -1, false, vim.split((f.text:gsub('\n$', '')), '\n', { plain = true }))
  vim.bo[b].modifiable = false
  -- vim.filetype.match({filename}) is 0.8+; 0.7's takes other arguments.
  local ok, ft = pcall(function() return vim.filetype.match({ filename = f.path }) end)
  if ok and type(ft) == 'string' then
    vim.bo[b].filetype = ft
  end
  vim.cmd('rightbelow vsplit')
  vim.api.nvim_win_set_buf(0, b)
  return b
end

-- The loaded buffer of file path, or nil. Compared by full name, not with
-- bufnr(), which also takes a partial match.
local function buffer_of(path)
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(b) and vim.api.nvim_buf_get_name(b) == path then
      return b
    end
  end
  return nil
end

-- kiln's answer to an apply of o: mark each file, reload the unmodified
-- buffers of the files written, say what happened.
local function applied(o, result, local_skips)
  local by_path = {}
  for _, f in ipairs(o.files) do
    by_path[f.path] = f
  end
  local done, skips = 0, {}
  for _, p in ipairs(type(result.applied) == 'table' and result.applied or {}) do
    local f = by_path[p]
    if f then
      f.state, f.reason = 'applied', nil
      done = done + 1
      local b = f.kind ~= 'deleted' and buffer_of(f.path)
      if b and not vim.bo[b].modified then
        vim.api.nvim_buf_call(b, function() vim.cmd('silent! edit') end)
      end
    end
  end
  for _, s in ipairs(type(result.skipped) == 'table' and result.skipped or {}) do
    local f = by_path[s.path]
    local reason = tostring(s.reason)
    if f then
      f.state, f.reason = 'skipped', reason
    end
    table.insert(skips, rel(o, tostring(s.path)) .. ' (' .. reason .. ')')
  end
  vim.list_extend(skips, local_skips)
  if list_buf and vim.api.nvim_buf_is_valid(list_buf) then
    M.render()
  end
  if #skips > 0 then
    client.notify(('applied %d change%s to %s; skipped %d: %s'):format(done, done == 1 and '' or 's',
      tostring(o.workspace), #skips, table.concat(skips, '; ')), vim.log.levels.ERROR)
    return
  end
  client.notify(('applied %d change%s to %s'):format(done, done == 1 and '' or 's', tostring(o.workspace)))
end

--- :KilnChanges apply: ask kiln to write every change not applied yet
--- (workspace/applyChanges). kiln skips each file changed since the run;
--- a file modified in a buffer here is not sent. Each skip is reported.
function M.apply()
  local o = M.offer
  if not o then
    client.notify('no workspace changes to apply', vim.log.levels.WARN)
    return false
  end
  if o.applying or o.declining then
    client.notify('the workspace changes are being ' .. (o.applying and 'applied' or 'discarded'),
      vim.log.levels.WARN)
    return false
  end
  local paths, local_skips = {}, {}
  for _, f in ipairs(o.files) do
    if f.state ~= 'applied' and f.state ~= 'declined' and f.state ~= 'kept' then
      local b = buffer_of(f.path)
      if b and vim.bo[b].modified then
        f.state, f.reason = 'skipped', 'modified in a buffer: write or undo it, then apply again'
        table.insert(local_skips, rel(o, f.path) .. ' (' .. f.reason .. ')')
      else
        table.insert(paths, f.path)
      end
    end
  end
  if #paths == 0 and #local_skips == 0 then
    local _, _, discarded = tally(o)
    client.notify(discarded > 0 and 'no workspace changes to apply: the rest were discarded'
      or 'every workspace change of this run is applied already', vim.log.levels.WARN)
    return false
  end
  if not client.running() then
    -- kiln keeps a run's changes in the server's memory only.
    client.notify('nothing applied: the server that ran the code has stopped, and its changes with it ' ..
      '(run the code again)', vim.log.levels.ERROR)
    return false
  end
  if not client.supports('workspace/applyChanges') then
    client.notify('nothing applied: this kiln server cannot apply changes (no workspace/applyChanges)',
      vim.log.levels.ERROR)
    return false
  end
  if #paths == 0 then
    -- Only buffers modified here: nothing to ask kiln.
    applied(o, {}, local_skips)
    return false
  end
  o.applying = true
  client.request('workspace/applyChanges', { runId = o.run_id, paths = paths }, function(err, result)
    o.applying = nil
    if err then
      client.notify('nothing applied: ' .. tostring(err.message), vim.log.levels.ERROR)
      return
    end
    applied(o, type(result) == 'table' and result or {}, local_skips)
  end)
  return true
end

-- kiln's answer to a decline of o: mark each file 'declined' (the session
-- dropped it; it can no longer be applied) or 'kept' (the session still
-- shows it, with kiln's reason), and say what happened: a kept change is
-- an error, never a success.
local function declined(o, result)
  local by_path = {}
  for _, f in ipairs(o.files) do
    by_path[f.path] = f
  end
  local dropped, kept = {}, {}
  for _, p in ipairs(type(result.declined) == 'table' and result.declined or {}) do
    local f = by_path[p]
    if f then
      f.state, f.reason = 'declined', nil
    end
    table.insert(dropped, rel(o, tostring(p)))
  end
  for _, k in ipairs(type(result.kept) == 'table' and result.kept or {}) do
    local f = by_path[k.path]
    local reason = tostring(k.reason)
    if f then
      f.state, f.reason = 'kept', reason
    end
    table.insert(kept, rel(o, tostring(k.path)) .. ' (' .. reason .. ')')
  end
  if list_buf and vim.api.nvim_buf_is_valid(list_buf) then
    M.render()
  end
  local said = ('discarded %d change%s of run %s: kiln dropped %s'):format(#dropped, #dropped == 1 and '' or 's',
    tostring(o.run_id), #dropped == 0 and 'none' or table.concat(dropped, ', '))
  if #kept > 0 then
    client.notify(said .. ('; the session still holds %d: %s'):format(#kept, table.concat(kept, '; ')),
      vim.log.levels.ERROR)
    return
  end
  client.notify(said)
end

-- Forget o here only (kiln is not asked), saying why.
local function forget(why)
  M.offer = nil
  if list_buf and vim.api.nvim_buf_is_valid(list_buf) then
    M.render()
  end
  client.notify('workspace changes forgotten here only: ' .. why, vim.log.levels.WARN)
end

--- :KilnChanges discard: decline every change not applied yet
--- (workspace/declineChanges): kiln forgets them, none can be applied
--- afterwards, and a live session drops them from its layer, so its next
--- run sees the folder's file. Each change the session still holds is
--- reported with kiln's reason. Without a server that can, the changes
--- are forgotten here only.
function M.discard()
  local o = M.offer
  if not o then
    client.notify('no workspace changes to discard', vim.log.levels.WARN)
    return false
  end
  if o.applying or o.declining then
    client.notify('the workspace changes are being ' .. (o.applying and 'applied' or 'discarded'),
      vim.log.levels.WARN)
    return false
  end
  local paths = {}
  for _, f in ipairs(o.files) do
    if f.state ~= 'applied' and f.state ~= 'declined' then
      table.insert(paths, f.path)
    end
  end
  if #paths == 0 then
    M.offer = nil
    if list_buf and vim.api.nvim_buf_is_valid(list_buf) then
      M.render()
    end
    client.notify('workspace changes forgotten (none was left to discard)')
    return false
  end
  if not client.running() then
    forget('the server that ran the code has stopped, and its changes with it')
    return false
  end
  if not client.supports('workspace/declineChanges') then
    forget('this kiln server cannot decline changes (no workspace/declineChanges): a session may still show them')
    return false
  end
  o.declining = true
  client.request('workspace/declineChanges', { runId = o.run_id, paths = paths }, function(err, result)
    o.declining = nil
    if err then
      client.notify('nothing discarded: ' .. tostring(err.message) ..
        (err.code == -32803 and ' (discard again after the run)' or ''), vim.log.levels.ERROR)
      return
    end
    declined(o, type(result) == 'table' and result or {})
  end)
  return true
end

return M

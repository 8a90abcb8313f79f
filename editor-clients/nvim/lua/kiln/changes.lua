-- kiln.changes: the files a run created, changed or deleted in the
-- workspace (the result's workspaceChanges and workspaceEdit, which the
-- server never applies), offered for review like a proposal: :KilnChanges
-- lists them, <CR> shows a file's new content, ":KilnChanges apply" writes
-- them and ":KilnChanges discard" forgets them. Nothing is written but on
-- that command, and nothing stale: each file is compared with what it held
-- when the run ended, and a file that changed since (on disk, or modified
-- in a buffer) stops the whole apply.
local client = require('kiln.client')
local compat = require('kiln.compat')
local scratch = require('kiln.scratch')

local M = {}

-- The last run's offer: { run_id, workspace, files = { {path, kind, size,
-- text?, in_edit, recursive, before} }, omitted }, or nil.
M.offer = nil
local list_buf = nil

local MAX_READ = 4 * 1024 * 1024

-- A file's bytes, false when it does not exist, nil when it cannot be
-- read (or is too large to compare).
local function read(path)
  local st = compat.uv.fs_lstat(path)
  if not st then
    return false
  end
  if st.type ~= 'file' then
    return st.type
  end
  if st.size > MAX_READ then
    return nil
  end
  local f = io.open(path, 'rb')
  if not f then
    return nil
  end
  local s = f:read('*a')
  f:close()
  return s
end

local function rel(o, path)
  local w = o.workspace
  if w and path:sub(1, #w + 1) == w .. '/' then
    return path:sub(#w + 2)
  end
  return path
end

--- A run ended with result run: keep its workspace changes for review and
--- return the lines that say so (nil when it changed nothing).
function M.record(run)
  local changes = run and run.workspaceChanges
  if type(changes) ~= 'table' or #changes == 0 then
    return nil
  end
  local o = { run_id = run.runId, workspace = type(run.workspace) == 'string' and run.workspace or nil,
    files = {}, omitted = tonumber(run.workspaceChangesOmitted) }
  local texts, recursive = {}, {}
  local edit = type(run.workspaceEdit) == 'table' and run.workspaceEdit.documentChanges or {}
  for _, dc in ipairs(type(edit) == 'table' and edit or {}) do
    if dc.kind == 'delete' and type(dc.uri) == 'string' then
      recursive[vim.uri_to_fname(dc.uri)] = dc.options and dc.options.recursive == true
    elseif type(dc.textDocument) == 'table' and type(dc.edits) == 'table' then
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
      text = texts[path], recursive = recursive[path], directory = c.directory == true, before = read(path) })
  end
  M.offer = o
  local lines = { ('[the run changed %d file%s in the workspace; nothing is written: :KilnChanges reviews them]')
    :format(#o.files, #o.files == 1 and '' or 's') }
  for _, f in ipairs(o.files) do
    table.insert(lines, ('  %-8s %s'):format(f.kind, rel(o, f.path)))
  end
  if list_buf and vim.api.nvim_buf_is_valid(list_buf) then
    M.render()
  end
  return lines
end

local function describe(o, f)
  local s = ('%-8s %s'):format(f.kind, rel(o, f.path))
  if f.kind ~= 'deleted' then
    s = s .. (' (%s bytes)'):format(tostring(f.size))
  end
  if not f.in_edit then
    s = s .. ' [binary or too large: not applied]'
  end
  return s
end

-- The list buffer's lines: a header, one line per file (row 3 on), a
-- footer with the keys.
function M.render()
  local o = M.offer
  local lines
  if not o then
    lines = { 'kiln: no workspace changes to review' }
  else
    lines = { ('kiln: run %s changed %s (not applied)'):format(tostring(o.run_id), tostring(o.workspace)), '' }
    for _, f in ipairs(o.files) do
      table.insert(lines, describe(o, f))
    end
    if o.omitted and o.omitted > 0 then
      table.insert(lines, ('... and %d more, not listed (not applied)'):format(o.omitted))
    end
    vim.list_extend(lines, { '', '<CR> shows the new content; :KilnChanges apply writes every file;',
      ':KilnChanges discard forgets them' })
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
    client.notify(f.kind == 'deleted' and (rel(o, f.path) .. ' is deleted by the run')
      or (rel(o, f.path) .. ' is binary or too large to show'))
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

-- Why file f may not be written now, or nil.
local function stale(o, f)
  if o.workspace == nil or f.path:sub(1, #o.workspace + 1) ~= o.workspace .. '/' then
    return 'outside the workspace'
  end
  -- No link on the way: a write must land where the run's did.
  local p = o.workspace
  for part in f.path:sub(#o.workspace + 2):gmatch('[^/]+') do
    p = p .. '/' .. part
    local st = compat.uv.fs_lstat(p)
    if st and st.type == 'link' then
      return 'a symbolic link on its path (' .. p .. ')'
    end
  end
  local now = read(f.path)
  if now == nil or f.before == nil or now ~= f.before then
    return 'changed on disk since the run'
  end
  local b = vim.fn.bufnr(f.path)
  if b ~= -1 and vim.bo[b].modified then
    return 'modified in a buffer'
  end
  return nil
end

local function write_file(path, text)
  vim.fn.mkdir(vim.fn.fnamemodify(path, ':h'), 'p')
  local tmp = path .. '.kiln-tmp-' .. vim.fn.getpid()
  local f, err = io.open(tmp, 'wb')
  if not f then
    return nil, err
  end
  f:write(text)
  f:close()
  local ok, rerr = os.rename(tmp, path)
  if not ok then
    os.remove(tmp)
    return nil, rerr
  end
  return true
end

--- :KilnChanges apply: write every change, or none when one is stale.
function M.apply()
  local o = M.offer
  if not o then
    client.notify('no workspace changes to apply', vim.log.levels.WARN)
    return false
  end
  local problems = {}
  for _, f in ipairs(o.files) do
    if f.in_edit then
      local why = stale(o, f)
      if why then
        table.insert(problems, rel(o, f.path) .. ': ' .. why)
      end
    end
  end
  if #problems > 0 then
    client.notify('nothing applied, a file is stale: ' .. table.concat(problems, '; ') ..
      ' (run the code again)', vim.log.levels.ERROR)
    return false
  end
  local done, failed = 0, {}
  for _, f in ipairs(o.files) do
    if f.in_edit then
      local ok, err
      if f.kind == 'deleted' then
        ok = vim.fn.delete(f.path, f.recursive and 'rf' or '') == 0
        err = 'cannot delete'
      else
        ok, err = write_file(f.path, f.text or '')
      end
      if ok then
        done = done + 1
      else
        table.insert(failed, rel(o, f.path) .. ': ' .. tostring(err))
      end
    end
  end
  M.offer = nil
  pcall(vim.cmd, 'checktime')
  if list_buf and vim.api.nvim_buf_is_valid(list_buf) then
    M.render()
  end
  if #failed > 0 then
    client.notify(('applied %d change%s; failed: %s'):format(done, done == 1 and '' or 's',
      table.concat(failed, '; ')), vim.log.levels.ERROR)
    return false
  end
  client.notify(('applied %d change%s to %s'):format(done, done == 1 and '' or 's', tostring(o.workspace)))
  return true
end

function M.discard()
  M.offer = nil
  if list_buf and vim.api.nvim_buf_is_valid(list_buf) then
    M.render()
  end
  client.notify('workspace changes discarded')
end

return M

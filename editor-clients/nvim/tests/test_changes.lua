-- A run's workspace changes (issue 12's workspaceEdit) offered for review
-- and applied only on the user's command, never onto a stale file; and
-- :KilnValidate's diagnostics kept fresh on change (validate_on_change).
local h = _G.h

local function write(path, s)
  local f = assert(io.open(path, 'wb'))
  f:write(s)
  f:close()
end

-- A project folder the sandbox's user (nobody, when the tests run as root)
-- can read, made the cwd, and so the server's workspace.
local function project()
  local dir = ('/tmp/kiln-nvim-ws-%d-%d'):format(vim.fn.getpid(), math.random(1e9))
  vim.fn.mkdir(dir, 'p', tonumber('755', 8))
  vim.fn.setfperm(dir, 'rwxr-xr-x')
  write(dir .. '/data.txt', 'a\n')
  write(dir .. '/old.txt', 'x\n')
  -- As root the box runs as nobody, and the folder's owner's files are
  -- nobody's in the box (an idmapped mount, docs/sandbox.md): the files
  -- stay the user's, as a person's project has them.
  for _, f in ipairs({ 'data.txt', 'old.txt' }) do
    vim.fn.setfperm(dir .. '/' .. f, 'rw-r--r--')
  end
  return dir
end

local function in_project(fn)
  local dir = project()
  local cwd = vim.fn.getcwd()
  vim.cmd('cd ' .. vim.fn.fnameescape(dir))
  local ok, err = pcall(fn, dir)
  vim.cmd('cd ' .. vim.fn.fnameescape(cwd))
  vim.fn.delete(dir, 'rf')
  if not ok then
    error(err, 0)
  end
end

local CODE = {
  'import os',
  'open("report.txt", "w").write("total 3\\n")',
  'open("data.txt", "a").write("b\\n")',
  'os.remove("old.txt")',
  'print("wrote")',
}

return {
  { 'changes: a run\'s workspace edit is listed, shown, and applied on :KilnChanges apply', function()
    in_project(function(dir)
      h.setup()
      h.need('snippet/run')
      h.buffer(CODE)
      vim.cmd('KilnRun')
      local last = h.wait_run()
      h.eq(dir, last.run.workspace, 'the run saw the project')
      local lines = require('kiln.output').lines()
      h.eq({
        'kiln run: [buffer]',
        'wrote',
      }, vim.list_slice(lines, 1, 2), 'the output')
      h.ok(lines[3]:find('^%[exit 0, %d+ ms%]$'), 'the summary: ' .. lines[3])
      -- The server walks its layer in its own order: compare as a set.
      local listed = vim.list_slice(lines, 5)
      table.sort(listed)
      h.eq('[the run changed 3 files in the workspace; nothing is written: :KilnChanges reviews them]', lines[4],
        'the offer')
      h.eq({ '  created  report.txt', '  deleted  old.txt', '  modified data.txt' }, listed, 'the files')
      -- Nothing written yet.
      h.eq('a\n', h.read_file(dir .. '/data.txt'), 'data.txt untouched')
      h.eq('x\n', h.read_file(dir .. '/old.txt'), 'old.txt still there')
      h.eq(nil, h.read_file(dir .. '/report.txt'), 'no report.txt yet')
      -- The review.
      vim.cmd('KilnChanges')
      local list = h.lines(0)
      h.eq(('kiln: run %s changed %s (not applied)'):format(last.run.runId, dir), list[1], 'the list header')
      local rows = {}
      for i, l in ipairs(list) do
        local name = l:match('^%a+%s+(%S+)')
        if name and i > 2 then
          rows[name] = { i = i, line = l }
        end
      end
      h.eq('created  report.txt (8 bytes)', rows['report.txt'] and rows['report.txt'].line, 'report line')
      h.eq('modified data.txt (4 bytes)', rows['data.txt'] and rows['data.txt'].line, 'data line')
      h.eq('deleted  old.txt', rows['old.txt'] and rows['old.txt'].line, 'old line')
      vim.api.nvim_win_set_cursor(0, { rows['data.txt'].i, 0 })
      vim.cmd('execute "normal \\<CR>"')
      h.eq('kiln://changes/data.txt', vim.api.nvim_buf_get_name(0), 'the new content buffer')
      h.eq({ 'a', 'b' }, h.lines(0), 'the new content of data.txt')
      h.eq('a\n', h.read_file(dir .. '/data.txt'), 'still untouched after the review')
      vim.cmd('KilnChanges apply')
      h.eq('total 3\n', h.read_file(dir .. '/report.txt'), 'report.txt created')
      h.eq('a\nb\n', h.read_file(dir .. '/data.txt'), 'data.txt modified')
      h.eq(nil, h.read_file(dir .. '/old.txt'), 'old.txt deleted')
      h.ok(h.message('applied 3 changes to ' .. vim.pesc(dir)), 'reported: ' .. vim.inspect(h.messages))
    end)
  end },

  { 'changes: a file changed on disk since the run stops the apply; nothing is written', function()
    in_project(function(dir)
      h.setup()
      h.need('snippet/run')
      h.buffer(CODE)
      vim.cmd('KilnRun')
      h.wait_run()
      -- The user edits data.txt after the run.
      write(dir .. '/data.txt', 'a\nmine\n')
      h.messages = {}
      vim.cmd('KilnChanges apply')
      h.ok(h.message('nothing applied, a file is stale: data.txt: changed on disk since the run'),
        'refused: ' .. vim.inspect(h.messages))
      h.eq('a\nmine\n', h.read_file(dir .. '/data.txt'), 'the user\'s data.txt kept')
      h.eq('x\n', h.read_file(dir .. '/old.txt'), 'old.txt not deleted')
      h.eq(nil, h.read_file(dir .. '/report.txt'), 'report.txt not created')
      -- A file open and modified in a buffer is stale too.
      write(dir .. '/data.txt', 'a\n')
      vim.cmd('KilnRun')
      h.wait_run()
      vim.cmd('edit ' .. vim.fn.fnameescape(dir .. '/data.txt'))
      vim.api.nvim_buf_set_lines(0, 0, -1, false, { 'unsaved' })
      h.messages = {}
      vim.cmd('KilnChanges apply')
      h.ok(h.message('data.txt: modified in a buffer'), 'refused: ' .. vim.inspect(h.messages))
      h.eq('a\n', h.read_file(dir .. '/data.txt'), 'data.txt unchanged on disk')
      vim.cmd('KilnChanges discard')
      h.messages = {}
      vim.cmd('KilnChanges apply')
      h.ok(h.message('no workspace changes to apply'), 'discarded: ' .. vim.inspect(h.messages))
    end)
  end },

  { 'validate: with validate_on_change, fixing the error clears its diagnostic (debounced, quiet)', function()
    h.setup({ validate_on_change = true, validate_debounce_ms = 200 })
    h.need('snippet/validate')
    local buf = h.buffer({ 'x = 1', 'def f(:', '    pass' })
    local ns = require('kiln.validate').ns
    local done
    require('kiln').validate({ on_done = function(err, r) done = { err, r } end })
    h.wait(10000, function() return done ~= nil end, 'the validate answer')
    h.ok(#vim.diagnostic.get(buf, { namespace = ns }) > 0, 'the error is marked')
    -- Three quick edits, then the fix: one re-validation after the last.
    for i = 1, 3 do
      vim.api.nvim_buf_set_lines(buf, 0, 1, false, { 'x = ' .. i })
    end
    vim.api.nvim_buf_set_lines(buf, 1, 2, false, { 'def f():' })
    h.wait(10000, function() return #vim.diagnostic.get(buf, { namespace = ns }) == 0 end,
      'the diagnostic to go once the error is fixed')
    vim.wait(400)
    h.eq(1, require('kiln.validate').revalidations(buf), 'one debounced re-validation')
    -- Breaking it again marks it again.
    vim.api.nvim_buf_set_lines(buf, 2, 3, false, { '    return (' })
    h.wait(10000, function() return #vim.diagnostic.get(buf, { namespace = ns }) > 0 end, 'the new error')
    local said = 0
    for _, m in ipairs(h.messages) do
      if tostring(m.msg):find('validate:', 1, true) then
        said = said + 1
      end
    end
    h.eq(1, said, 'only :KilnValidate itself gave a message')
  end },

}

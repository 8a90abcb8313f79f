-- A run's workspace changes (issue 12's workspaceEdit) offered for review
-- and applied only on the user's command, never onto a stale file; and
-- :KilnValidate's diagnostics kept fresh on change (validate_on_change).
local h = _G.h

local write, in_project = h.write_file, h.in_project

local CODE = {
  'import os',
  'open("report.txt", "w").write("total 3\\n")',
  'open("data.txt", "a").write("b\\n")',
  'os.remove("old.txt")',
  'print("wrote")',
}

-- A run that saves a real PNG (made by hand, as matplotlib's savefig
-- would write one), writes bytes with NULs, and appends a row to a CSV.
local BINARY = {
  'import struct, zlib',
  'def chunk(t, d):',
  '    c = struct.pack(">I", len(d)) + t + d',
  '    return c + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)',
  'raw = b"".join(b"\\x00" + b"\\xff\\x00\\x00" * 4 for _ in range(4))',
  'png = (b"\\x89PNG\\r\\n\\x1a\\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 4, 4, 8, 2, 0, 0, 0))',
  '       + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))',
  'open("monthly.png", "wb").write(png)',
  'open("blob.bin", "wb").write(b"\\x00\\x01kiln\\x00" * 100)',
  'open("sales.csv", "a").write("2024-03,30\\n")',
  'print("saved")',
}

local SALES = 'month,total\n2024-01,10\n2024-02,20\n'

-- The run's change of path (from the result's workspaceChanges).
local function change(run, path)
  for _, c in ipairs(run.workspaceChanges or {}) do
    if c.path == path then
      return c
    end
  end
  return nil
end

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
      h.wait(10000, function() return h.message('applied') end, 'the apply')
      h.ok(h.message('^kiln: applied 3 changes to ' .. vim.pesc(dir) .. '$'), 'reported: ' .. vim.inspect(h.messages))
      h.eq('total 3\n', h.read_file(dir .. '/report.txt'), 'report.txt created')
      h.eq('a\nb\n', h.read_file(dir .. '/data.txt'), 'data.txt modified')
      h.eq(nil, h.read_file(dir .. '/old.txt'), 'old.txt deleted')
    end)
  end },

  { 'changes: kiln skips a file changed on disk since the run, and the plugin says so; the rest is applied', function()
    in_project(function(dir)
      h.setup()
      h.need('workspace/applyChanges')
      h.buffer(CODE)
      vim.cmd('KilnRun')
      h.wait_run()
      -- The user edits data.txt after the run.
      write(dir .. '/data.txt', 'a\nmine\n')
      h.messages = {}
      vim.cmd('KilnChanges apply')
      h.wait(10000, function() return h.message('applied') end, 'the apply')
      local m = h.message('^kiln: applied 2 changes to ' .. vim.pesc(dir) ..
        '; skipped 1: data%.txt %(it was changed on the host after the run%)$')
      h.ok(m and m.level == vim.log.levels.ERROR, 'the skip reported as an error: ' .. vim.inspect(h.messages))
      h.eq('a\nmine\n', h.read_file(dir .. '/data.txt'), 'the user\'s data.txt kept')
      h.eq(nil, h.read_file(dir .. '/old.txt'), 'old.txt deleted')
      h.eq('total 3\n', h.read_file(dir .. '/report.txt'), 'report.txt created')
      vim.cmd('KilnChanges')
      local list = h.lines(0)
      h.ok(vim.tbl_contains(list, 'modified data.txt (4 bytes) [skipped: it was changed on the host after the run]'),
        'the list says it: ' .. vim.inspect(list))
      h.ok(vim.tbl_contains(list, 'created  report.txt (8 bytes) [applied]'), 'applied in the list')
      h.ok(list[1]:find('(2 applied, 1 skipped)', 1, true), 'the header: ' .. list[1])
      -- A file open and modified in a buffer is not sent to kiln; the
      -- others are, and a file's open unmodified buffer is reloaded.
      write(dir .. '/data.txt', 'a\n')
      write(dir .. '/keep.txt', 'k0\n')
      vim.fn.setfperm(dir .. '/keep.txt', 'rw-r--r--')
      os.remove(dir .. '/report.txt')
      vim.cmd('edit ' .. vim.fn.fnameescape(dir .. '/keep.txt'))
      local keep = vim.api.nvim_get_current_buf()
      h.buffer({ 'open("data.txt", "a").write("b\\n")', 'open("keep.txt", "a").write("k\\n")',
        'open("report.txt", "w").write("total 3\\n")' })
      vim.cmd('KilnRun')
      h.wait_run()
      vim.cmd('edit ' .. vim.fn.fnameescape(dir .. '/data.txt'))
      vim.api.nvim_buf_set_lines(0, 0, -1, false, { 'unsaved' })
      write(dir .. '/report.txt', 'other\n')
      h.messages = {}
      vim.cmd('KilnChanges apply')
      h.wait(10000, function() return h.message('applied') end, 'the apply')
      m = h.message('^kiln: applied 1 change to ' .. vim.pesc(dir) .. '; skipped 2: ')
      h.ok(m, 'reported: ' .. vim.inspect(h.messages))
      h.ok(m.msg:find('report.txt (something was created at its path on the host after the run)', 1, true), m.msg)
      h.ok(m.msg:find('data.txt (modified in a buffer: write or undo it, then apply again)', 1, true), m.msg)
      h.eq('a\n', h.read_file(dir .. '/data.txt'), 'data.txt unchanged on disk')
      h.eq({ 'unsaved' }, h.lines(0), 'the modified buffer keeps its text')
      h.eq('other\n', h.read_file(dir .. '/report.txt'), 'report.txt kept')
      h.eq('k0\nk\n', h.read_file(dir .. '/keep.txt'), 'keep.txt written')
      h.eq({ 'k0', 'k' }, h.lines(keep), 'the open buffer of keep.txt reloaded')
      h.messages = {}
      vim.cmd('KilnChanges discard')
      h.wait(10000, function() return h.message('^kiln: discarded ') end, 'the discard')
      h.messages = {}
      vim.cmd('KilnChanges apply')
      h.ok(h.message('no workspace changes to apply: the rest were discarded'),
        'discarded: ' .. vim.inspect(h.messages))
    end)
  end },

  { 'changes: binary files are listed with size and kind and applied by kiln, byte for byte', function()
    in_project(function(dir)
      write(dir .. '/sales.csv', SALES)
      vim.fn.setfperm(dir .. '/sales.csv', 'rw-r--r--')
      h.setup()
      h.need('workspace/applyChanges')
      h.buffer(BINARY)
      vim.cmd('KilnRun')
      local run = h.wait_run().run
      local png, blob = change(run, dir .. '/monthly.png'), change(run, dir .. '/blob.bin')
      h.ok(png and png.binary == true and png.inEdit == false, 'the PNG is a binary change: ' .. vim.inspect(png))
      h.eq('image/png', png.mimeType, 'its kind')
      h.ok(blob and blob.binary == true, 'the NUL bytes are a binary change: ' .. vim.inspect(blob))
      h.ok(type(png.stored) == 'string' and h.read_file(png.stored), 'kiln kept the PNG: ' .. vim.inspect(png))
      h.ok(type(blob.stored) == 'string' and h.read_file(blob.stored), 'kiln kept blob.bin')
      local png_bytes, blob_bytes = h.read_file(png.stored), h.read_file(blob.stored)
      h.eq('\137PNG\r\n\26\n', png_bytes:sub(1, 8), 'the kept copy is the PNG')
      h.eq(('\0\1kiln\0'):rep(100), blob_bytes, 'the kept copy of blob.bin')
      h.eq(#png_bytes, png.size, 'the PNG size')
      -- The output and the list say size and kind.
      local lines = require('kiln.output').lines()
      h.ok(vim.tbl_contains(lines, ('  created  monthly.png (%d bytes, image/png)'):format(#png_bytes)),
        'the output lists the PNG: ' .. vim.inspect(lines))
      h.ok(vim.tbl_contains(lines, '  created  blob.bin (700 bytes, application/octet-stream)'),
        'the output lists blob.bin: ' .. vim.inspect(lines))
      vim.cmd('KilnChanges')
      local list = h.lines(0)
      local row
      for i, l in ipairs(list) do
        if l:find('monthly.png', 1, true) then
          row = i
        end
      end
      h.eq(('created  monthly.png (%d bytes, image/png, binary)'):format(#png_bytes), list[row], 'the PNG line')
      h.ok(vim.tbl_contains(list, 'modified sales.csv (45 bytes)'), 'the CSV line: ' .. vim.inspect(list))
      vim.api.nvim_win_set_cursor(0, { row, 0 })
      vim.cmd('execute "normal \\<CR>"')
      h.ok(h.message('^kiln: monthly%.png is binary %(image/png, %d+ bytes%); kiln keeps its new content in ' ..
        vim.pesc(png.stored) .. '$'), 'shown: ' .. vim.inspect(h.messages))
      h.eq(nil, h.read_file(dir .. '/monthly.png'), 'nothing written before the apply')
      h.messages = {}
      vim.cmd('KilnChanges apply')
      h.wait(10000, function() return h.message('applied') end, 'the apply')
      h.ok(h.message('^kiln: applied 3 changes to ' .. vim.pesc(dir) .. '$'), 'reported: ' .. vim.inspect(h.messages))
      h.ok(h.read_file(dir .. '/monthly.png') == png_bytes, 'monthly.png is the run\'s bytes')
      h.ok(h.read_file(dir .. '/blob.bin') == blob_bytes, 'blob.bin is the run\'s bytes')
      h.eq(SALES .. '2024-03,30\n', h.read_file(dir .. '/sales.csv'), 'sales.csv has the new row')
    end)
  end },

  { 'changes: a binary file changed on the host since the run is refused by kiln and reported', function()
    in_project(function(dir)
      write(dir .. '/sales.csv', SALES)
      write(dir .. '/monthly.png', 'an older plot')
      for _, f in ipairs({ 'sales.csv', 'monthly.png' }) do
        vim.fn.setfperm(dir .. '/' .. f, 'rw-r--r--')
      end
      h.setup()
      h.need('workspace/applyChanges')
      h.buffer(BINARY)
      vim.cmd('KilnRun')
      local run = h.wait_run().run
      local png = change(run, dir .. '/monthly.png')
      h.ok(png and png.kind == 'modified' and png.binary == true and png.stored, 'a modified PNG: ' .. vim.inspect(png))
      -- The person replaces the plot after the run.
      write(dir .. '/monthly.png', 'the host\'s new plot\0')
      h.messages = {}
      vim.cmd('KilnChanges apply')
      h.wait(10000, function() return h.message('applied') end, 'the apply')
      local m = h.message('^kiln: applied 2 changes to ' .. vim.pesc(dir) ..
        '; skipped 1: monthly%.png %(it was changed on the host after the run%)$')
      h.ok(m and m.level == vim.log.levels.ERROR, 'the skip reported as an error: ' .. vim.inspect(h.messages))
      h.eq('the host\'s new plot\0', h.read_file(dir .. '/monthly.png'), 'the host\'s plot kept')
      h.ok(h.read_file(dir .. '/blob.bin') == h.read_file(change(run, dir .. '/blob.bin').stored),
        'blob.bin applied')
      h.eq(SALES .. '2024-03,30\n', h.read_file(dir .. '/sales.csv'), 'sales.csv applied')
      vim.cmd('KilnChanges')
      h.ok(vim.tbl_contains(h.lines(0), ('modified monthly.png (%d bytes, image/png, binary) ' ..
        '[skipped: it was changed on the host after the run]'):format(png.size)), vim.inspect(h.lines(0)))
    end)
  end },

  { 'changes: :KilnChanges discard declines a session run\'s changes; the next run no longer sees them', function()
    in_project(function(dir)
      -- A folder's file larger than kiln sends into a session (4 MiB):
      -- declining its change cannot take it out of the session's layer.
      write(dir .. '/big.txt', ('x'):rep(5 * 1024 * 1024))
      vim.fn.setfperm(dir .. '/big.txt', 'rw-r--r--')
      h.setup({ session = true })
      h.need('workspace/declineChanges')
      h.buffer({ 'open("notes.txt", "w").write("n\\n")', 'print("wrote")' })
      vim.cmd('KilnRun')
      local run = h.wait_run().run
      h.ok(type(run.sessionId) == 'string', 'a session run: ' .. vim.inspect(run.sessionId))
      h.ok(change(run, dir .. '/notes.txt'), 'notes.txt is a change: ' .. vim.inspect(run.workspaceChanges))
      h.messages = {}
      vim.cmd('KilnChanges discard')
      h.wait(10000, function() return h.message('^kiln: discarded ') end, 'the discard')
      local m = h.message('^kiln: discarded ')
      h.eq(('kiln: discarded 1 change of run %s: kiln dropped notes.txt'):format(run.runId), m.msg, 'told')
      h.ok(m.level == nil or m.level == vim.log.levels.INFO, 'told as news, not an error: ' .. vim.inspect(m))
      vim.cmd('KilnChanges')
      local list = h.lines(0)
      h.ok(vim.tbl_contains(list, 'created  notes.txt (2 bytes) [discarded: dropped by kiln]'), vim.inspect(list))
      h.ok(list[1]:find('(not applied, 1 discarded)', 1, true), 'the header: ' .. list[1])
      h.messages = {}
      vim.cmd('KilnChanges apply')
      h.ok(h.message('no workspace changes to apply: the rest were discarded'), vim.inspect(h.messages))
      -- The session's next run reads the folder: no notes.txt.
      h.buffer({ 'import os', 'print("notes", os.path.exists("notes.txt"))', 'open("big.txt", "a").write("y")' })
      vim.cmd('KilnRun')
      run = h.wait_run().run
      h.ok(vim.tbl_contains(require('kiln.output').lines(), 'notes False'),
        'the session dropped notes.txt: ' .. vim.inspect(require('kiln.output').lines()))
      h.eq(nil, h.read_file(dir .. '/notes.txt'), 'nothing written on the host')
      h.ok(change(run, dir .. '/big.txt'), 'big.txt is a change: ' .. vim.inspect(run.workspaceChanges))
      -- A change the session cannot drop is said, with kiln's reason, as an error.
      h.messages = {}
      vim.cmd('KilnChanges discard')
      h.wait(10000, function() return h.message('^kiln: discarded ') end, 'the second discard')
      m = h.message('^kiln: discarded ')
      h.ok(m.msg:find(('^kiln: discarded 0 changes of run %s: kiln dropped none; the session still holds 1: ' ..
        'big%%.txt %%(.+%%)$'):format(run.runId)), m.msg)
      h.eq(vim.log.levels.ERROR, m.level, 'a change still held is an error')
      vim.cmd('KilnChanges')
      local row
      for _, l in ipairs(h.lines(0)) do
        if l:find('big.txt', 1, true) then
          row = l
        end
      end
      h.ok(row and row:find('[discarded, but the session still holds it: ', 1, true), vim.inspect(h.lines(0)))
      h.buffer({ 'import os', 'print("big", os.path.getsize("big.txt"))' })
      vim.cmd('KilnRun')
      h.wait_run()
      h.ok(vim.tbl_contains(require('kiln.output').lines(), 'big ' .. (5 * 1024 * 1024 + 1)),
        'the session still shows it: ' .. vim.inspect(require('kiln.output').lines()))
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

-- Artifacts and displays (issues 12 and 18): inline files decoded and saved
-- on 0.7 and 0.10, the path shown, small text shown; run/display from a
-- session (values, tables as text, figures saved); the opener configurable,
-- a missing one a message, never a Lua error.
local h = _G.h

-- The summary line's duration varies: compare it by shape.
local function summary_ok(line)
  return line ~= nil and line:find('^%[exit 0, %d+ ms%]$') ~= nil
end

local function section()
  local output = require('kiln.output')
  -- (The plugin before issue 18 cleared the window for each run.)
  return output.section_lines and output.section_lines() or output.lines()
end

-- 256 bytes after a PNG signature: every byte value survives decoding.
local function png_bytes()
  local t = { '\137PNG\r\n\26\n' }
  for i = 0, 255 do
    t[#t + 1] = string.char(i)
  end
  return table.concat(t)
end

return {
  { 'artifacts: inline files are decoded and saved, the path shown, small text shown', function()
    local dir = vim.fn.tempname()
    h.setup({ output = { save_dir = dir } })
    h.need('snippet/run')
    h.buffer({
      'with open("/work/out/table.csv", "w") as f:',
      '    f.write("a,b\\n1,2\\n")',
      'with open("/work/out/blob.png", "wb") as f:',
      '    f.write(b"\\x89PNG\\r\\n\\x1a\\n" + bytes(range(256)))',
    })
    vim.cmd('KilnRun')
    local last = h.wait_run()
    local lines = section()
    h.eq('kiln run: [buffer]', lines[1], 'the header')
    h.eq(6, #lines, 'header, 2 + 1 + 2 lines, summary:\n' .. table.concat(lines, '\n'))
    h.ok(summary_ok(lines[6]), 'the summary: ' .. tostring(lines[6]))
    -- Artifacts come in the order the server walks /work/out.
    local rows = {}
    for i, l in ipairs(lines) do
      local n, name = l:match('^artifact (%d): (%S+)')
      if n then
        rows[name] = { i = i, n = tonumber(n) }
      end
    end
    h.ok(rows['table.csv'] and rows['blob.png'], 'both listed:\n' .. table.concat(lines, '\n'))
    local csv = last.artifacts[rows['table.csv'].n]
    local png = last.artifacts[rows['blob.png'].n]
    h.ok(csv.path and csv.path:find('^' .. vim.pesc(dir)), 'saved under save_dir: ' .. tostring(csv.path))
    h.eq(('artifact %d: table.csv (text/csv, 8 bytes) saved to %s  [:KilnArtifact %d opens it]'):format(
      rows['table.csv'].n, csv.path, rows['table.csv'].n), lines[rows['table.csv'].i], 'the csv line')
    h.eq('  | a,b', lines[rows['table.csv'].i + 1], 'its first line shown')
    h.eq('  | 1,2', lines[rows['table.csv'].i + 2], 'its second line shown')
    h.eq('a,b\n1,2\n', h.read_file(csv.path), 'the csv bytes')
    h.eq(('artifact %d: blob.png (image/png, 264 bytes) saved to %s  [:KilnArtifact %d opens it]'):format(
      rows['blob.png'].n, png.path, rows['blob.png'].n), lines[rows['blob.png'].i], 'the png line')
    h.ok(h.read_file(png.path) == png_bytes(), 'the png bytes decoded exactly')
  end },

  { 'artifacts: :KilnArtifact opens with open_cmd; a missing opener is a message', function()
    local log = vim.fn.tempname()
    local opener = vim.fn.tempname()
    vim.fn.writefile({ '#!/bin/sh', 'echo "$1" >> ' .. log }, opener)
    vim.fn.setfperm(opener, 'rwx------')
    h.setup({ open_cmd = { opener } })
    h.need('snippet/run')
    h.buffer({ 'open("/work/out/a.txt", "w").write("x")' })
    vim.cmd('KilnRun')
    local last = h.wait_run()
    vim.cmd('KilnArtifact 1')
    -- The shell creates the file before echo writes to it: wait for the line.
    h.wait(5000, function() return vim.fn.filereadable(log) == 1 and #vim.fn.readfile(log) > 0 end,
      'the opener to run')
    h.eq({ last.artifacts[1].path }, vim.fn.readfile(log), 'the opener got the saved path')
    -- A missing opener.
    require('kiln.config').options.open_cmd = { '/nonexistent/opener' }
    h.messages = {}
    local ok, err = pcall(vim.cmd, 'KilnArtifact 1')
    h.ok(ok, 'no Lua error: ' .. tostring(err))
    h.ok(h.message("cannot open .*no opener: '/nonexistent/opener' is not an executable"),
      'the message: ' .. vim.inspect(h.messages))
    -- The default opener, with none on PATH (vim.ui.open on 0.10, xdg-open on 0.7).
    require('kiln.config').options.open_cmd = nil
    local path = vim.env.PATH
    vim.env.PATH = vim.fn.tempname()
    h.messages = {}
    ok, err = pcall(vim.cmd, 'KilnArtifact 1')
    vim.env.PATH = path
    h.ok(ok, 'no Lua error: ' .. tostring(err))
    h.ok(h.message('cannot open ' .. vim.pesc(last.artifacts[1].path)), 'the message: ' .. vim.inspect(h.messages))
    -- No such artifact.
    h.messages = {}
    vim.cmd('KilnArtifact 7')
    h.ok(h.message('no artifact 7 %(the last run has 1%)'), 'the message: ' .. vim.inspect(h.messages))
  end },

  { 'health: :checkhealth kiln says what opens artifacts, and warns when nothing can', function()
    h.setup({ open_cmd = { '/nonexistent/opener' } })
    vim.cmd('checkhealth kiln')
    local text = table.concat(h.lines(0), '\n')
    h.ok(text:find("open_cmd '/nonexistent/opener' is not an executable: artifacts are saved but "
      .. ':KilnArtifact cannot open them', 1, true), 'in:\n' .. text)
    vim.cmd('bwipeout!')
    h.setup({ open_cmd = { 'sh' } })
    vim.cmd('checkhealth kiln')
    text = table.concat(h.lines(0), '\n')
    h.ok(text:find('open_cmd: ' .. vim.fn.exepath('sh'), 1, true), 'in:\n' .. text)
  end },

  { 'displays: a session keeps names, and its values, tables and figures show', function()
    local dir = vim.fn.tempname()
    h.setup({ session = true, output = { save_dir = dir } })
    h.need('session/open')
    h.buffer({ 'x = 5' })
    vim.cmd('KilnRun')
    h.wait_run()
    h.buffer({ 'x * 2' })
    vim.cmd('KilnRun')
    h.wait_run()
    local lines = section()
    h.eq('kiln run: [buffer]', lines[1], 'the header')
    h.eq('10', lines[2], 'the value displayed')
    h.ok(summary_ok(lines[3]), 'the summary: ' .. tostring(lines[3]))
    h.eq(3, #lines, 'nothing else:\n' .. table.concat(lines, '\n'))
    -- A DataFrame: its table as text, its HTML saved.
    h.buffer({ 'import pandas as pd', 'pd.DataFrame({"a": [1, 2], "b": [3, 4]})' })
    vim.cmd('KilnRun')
    local last = h.wait_run()
    lines = section()
    local html = last.artifacts[1]
    h.ok(html and html.mimeType == 'text/html', 'the html part: ' .. vim.inspect(last.artifacts))
    h.eq({
      'kiln run: [buffer]',
      ('display 1: text/html (%d bytes) saved to %s  [:KilnArtifact 1 opens it]'):format(html.size, html.path),
      '   a  b',
      '0  1  3',
      '1  2  4',
    }, vim.list_slice(lines, 1, 5), 'the table as text')
    h.ok(summary_ok(lines[6]), 'the summary: ' .. tostring(lines[6]))
    h.ok(h.read_file(html.path):find('<table', 1, true), 'the html file')
    -- A figure: saved as PNG.
    h.buffer({ 'import matplotlib.pyplot as plt', 'plt.plot([1, 2, 3])', 'plt.show()' })
    vim.cmd('KilnRun')
    last = h.wait_run(60000)
    lines = section()
    local png = last.artifacts[1]
    h.ok(png and png.mimeType == 'image/png', 'a png: ' .. vim.inspect(last.artifacts))
    h.eq(('display 1: image/png (%d bytes) saved to %s  [:KilnArtifact 1 opens it]'):format(png.size, png.path),
      lines[2], 'the figure line')
    h.eq('\137PNG\r\n\26\n', h.read_file(png.path):sub(1, 8), 'a PNG file')
    h.eq(png.size, #h.read_file(png.path), 'all of it')
  end },
}

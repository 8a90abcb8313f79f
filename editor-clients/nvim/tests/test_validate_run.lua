-- :KilnValidate, :KilnRun and :KilnCancel against the real server.
local h = _G.h

local function output_text()
  return table.concat(require('kiln.output').lines(), '\n')
end

return {
  { 'validate: diagnostics land on the buffer through vim.diagnostic', function()
    h.setup()
    h.need('snippet/validate')
    local buf = h.buffer({ 'x = 1', 'def f(:', '    pass' })
    local done
    require('kiln').validate({ on_done = function(err, r) done = { err, r } end })
    h.wait(10000, function() return done ~= nil end, 'the validate answer')
    h.eq(nil, done[1], 'error')
    local ds = vim.diagnostic.get(buf, { namespace = require('kiln.validate').ns })
    h.ok(#ds > 0, 'diagnostics for a syntax error')
    h.eq(1, ds[1].lnum, 'the syntax error is on line 2 (lnum 1)')
    h.eq('deny', done[2].verdict, 'verdict')
  end },

  { 'validate: a range is checked alone, its diagnostics placed on its lines', function()
    h.setup()
    h.need('snippet/validate')
    local buf = h.buffer({ 'def f(:', '    pass', 'y = 2', 'z = (' })
    local done
    require('kiln').validate({ line1 = 3, line2 = 4, on_done = function(err, r) done = { err, r } end })
    h.wait(10000, function() return done ~= nil end, 'the validate answer')
    local ds = vim.diagnostic.get(buf, { namespace = require('kiln.validate').ns })
    h.ok(#ds > 0, 'diagnostics')
    for _, d in ipairs(ds) do
      h.ok(d.lnum >= 2, 'diagnostic on line ' .. d.lnum .. ' is inside the range')
    end
  end },

  { 'run: stdout and stderr stream into the output window in order', function()
    h.setup()
    h.need('snippet/run')
    h.buffer({
      'import sys, time',
      'print("first", flush=True)',
      'time.sleep(1)',
      'for i in range(3):',
      '    print("out", i, flush=True)',
      'print("oops", file=sys.stderr, flush=True)',
      'raise SystemExit(3)',
    })
    vim.cmd('KilnRun')
    local run = require('kiln.run')
    h.ok(run.current, 'a run in flight')
    h.wait(15000, function() return output_text():find('first', 1, true) ~= nil end, 'the first line')
    h.ok(run.current ~= nil, 'output arrives while the run is still going')
    local last = h.wait_run()
    h.ok(last and last.result, 'a result: ' .. vim.inspect(last))
    local text = output_text()
    local a, b, c = text:find('out 0', 1, true), text:find('out 1', 1, true), text:find('out 2', 1, true)
    h.ok(a and b and c and a < b and b < c, 'stdout in order:\n' .. text)
    h.ok(text:find('oops', 1, true), 'stderr shown:\n' .. text)
    h.ok(text:find('exit 3', 1, true), 'the exit status:\n' .. text)
    h.ok(text:find('%d+ ms'), 'the duration:\n' .. text)
    h.ok(require('kiln.output').win(), 'the output window is open')
  end },

  { 'run: :KilnRun in a JavaScript buffer runs it with node', function()
    h.setup()
    h.need('snippet/run')
    if vim.fn.executable('/usr/bin/node') == 0 then
      h.fail('/usr/bin/node is not installed (make deps installs nodejs)')
    end
    -- The filetype is Neovim's; the server resolves it in its registry.
    -- Before the registry, the sandbox knew JavaScript only as "node".
    h.buffer({ 'const xs = [1, 2, 3];', 'console.log("js sum", xs.reduce((a, b) => a + b, 0));' },
      'javascript')
    vim.cmd('KilnRun')
    local last = h.wait_run()
    local text = output_text()
    h.ok(text:find('js sum 6', 1, true), 'node ran the buffer:\n' .. text)
    h.ok(last and last.result and last.result.exitCode == 0, 'exit 0: ' .. vim.inspect(last))
  end },

  { 'run: filetypes become the registry\'s names; unknown ones are refused with the list', function()
    h.setup()
    h.need('snippet/run')
    local doc = require('kiln.doc')
    h.eq('bash', doc.language_of_filetype('sh'), 'sh')
    h.eq('javascript', doc.language_of_filetype('javascriptreact'), 'javascriptreact')
    h.eq('javascript', doc.language_of_filetype('javascript'), 'javascript')
    h.eq('python', doc.language_of_filetype(''), 'no filetype')
    h.eq('zsh', doc.language_of_filetype('zsh'), 'zsh is not bash')
    h.buffer({ 'puts 1' }, 'ruby')
    vim.cmd('KilnRun')
    h.wait_run()
    local text = output_text()
    local found = text:find("unknown language 'ruby' (kiln knows python", 1, true)
      or h.message("unknown language 'ruby' %(kiln knows python")
    h.ok(found, 'the server names the language it does not know:\n' .. text .. '\n' .. vim.inspect(h.messages))
  end },

  { 'run: a selection runs alone', function()
    h.setup()
    h.need('snippet/run')
    h.buffer({ 'print("not me")', 'print("only me")', 'print("nor me")' }, 'python')
    vim.cmd('2KilnRun')
    h.wait_run()
    local text = output_text()
    h.ok(text:find('only me', 1, true), 'the selection ran:\n' .. text)
    h.ok(not text:find('not me', 1, true), 'the rest did not:\n' .. text)
  end },

  { 'run: files written to /work/out come back as artifacts', function()
    h.setup()
    h.need('snippet/run')
    h.buffer({ 'with open("/work/out/result.txt", "w") as f:', '    f.write("42\\n")', 'print("wrote")' })
    vim.cmd('KilnRun')
    local last = h.wait_run()
    local text = output_text()
    h.ok(text:find('wrote', 1, true), 'ran:\n' .. text)
    h.eq(1, #last.artifacts, 'one artifact: ' .. vim.inspect(last))
    h.ok(tostring(last.artifacts[1].name):find('result.txt', 1, true), 'its name: ' .. vim.inspect(last.artifacts))
    h.ok(text:find('artifact 1: [^\n]*result.txt'), 'listed in the output:\n' .. text)
  end },

  { 'run: :KilnCancel stops a running program', function()
    h.setup()
    h.need('snippet/run')
    h.buffer({ 'echo started', 'sleep 60', 'echo never' }, 'sh')
    vim.cmd('KilnRun')
    h.wait(15000, function() return output_text():find('started', 1, true) ~= nil end, 'the program to start')
    vim.cmd('KilnCancel')
    local last = h.wait_run(10000)
    h.ok(last.cancelled, 'the run ended as cancelled: ' .. vim.inspect(last))
    -- The server killed it: a new run starts at once and the old one
    -- never prints again.
    h.buffer({ 'echo second' }, 'sh')
    vim.cmd('KilnRun')
    h.wait_run()
    h.ok(output_text():find('second', 1, true), 'the next run works')
    h.ok(not output_text():find('never', 1, true), 'the cancelled program was stopped')
  end },

  { 'run: a server that dies mid-run ends the run with the reason', function()
    h.setup()
    h.need('snippet/run')
    h.buffer({ 'echo started', 'sleep 60' }, 'sh')
    vim.cmd('KilnRun')
    h.wait(15000, function() return output_text():find('started', 1, true) ~= nil end, 'the program to start')
    local client = require('kiln.client')
    vim.loop.kill(client.pid(), 9)
    local run = require('kiln.run')
    h.wait(5000, function() return run.current == nil end, 'the run to end')
    h.ok(output_text():find('[the server exited]', 1, true), 'said in the output:\n' .. output_text())
    h.ok(h.message('the server exited'), 'reported')
  end },
}

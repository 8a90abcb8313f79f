-- The output window as a daily user reads it (issue 18): it follows new
-- output only while the cursor is at its end, says how many lines the cap
-- dropped, keeps earlier runs, links a selection's traceback to the
-- buffer's lines; the status line and the death of the server.
local h = _G.h

local function has_line(pat)
  for _, l in ipairs(require('kiln.output').lines()) do
    if l:find(pat, 1, true) then
      return true
    end
  end
  return false
end

local function status_events()
  local n = { count = 0 }
  vim.api.nvim_create_autocmd('User', {
    pattern = 'KilnStatus',
    callback = function() n.count = n.count + 1 end,
  })
  return n
end

-- Messages at WARN and above (each is a Press ENTER in a real terminal
-- when more than one arrives at once).
local function loud()
  local out = {}
  for _, m in ipairs(h.messages) do
    if (m.level or vim.log.levels.INFO) >= vim.log.levels.WARN then
      table.insert(out, m.msg)
    end
  end
  return out
end

return {
  { 'output: the window follows new output only while its cursor is at the end', function()
    h.setup()
    h.need('snippet/run')
    h.buffer({
      'import time',
      'for i in range(8):',
      '    print("line", i, flush=True)',
      '    time.sleep(0.4)',
    })
    local src = vim.api.nvim_get_current_win()
    vim.cmd('KilnRun')
    local output = require('kiln.output')
    local w = output.win()
    h.ok(w, 'the output window is open')
    h.eq(src, vim.api.nvim_get_current_win(), 'the cursor stays in the code window')
    h.wait(15000, function() return has_line('line 1') end, 'line 1')
    -- The user scrolls up, in the output window.
    vim.api.nvim_set_current_win(w)
    vim.api.nvim_win_set_cursor(w, { 1, 0 })
    h.wait(15000, function() return has_line('line 4') end, 'line 4')
    h.eq(1, vim.api.nvim_win_get_cursor(w)[1], 'the cursor stayed where the user put it')
    -- Back at the end: it follows again.
    vim.api.nvim_win_set_cursor(w, { vim.api.nvim_buf_line_count(output.buf()), 0 })
    h.wait_run()
    h.eq(vim.api.nvim_buf_line_count(output.buf()), vim.api.nvim_win_get_cursor(w)[1],
      'the cursor followed to the last line')
    local lines = output.lines()
    h.ok(lines[#lines]:find('^%[exit 0, %d+ ms%]$'), 'the last line is the summary: ' .. lines[#lines])
  end },

  { 'output: the line cap drops the oldest lines and says how many', function()
    h.setup({ output = { max_lines = 20 } })
    h.need('snippet/run')
    h.buffer({ 'for i in range(100):', '    print("n", i)' })
    vim.cmd('KilnRun')
    h.wait_run()
    local lines = require('kiln.output').lines()
    -- header + 100 lines + summary = 102; 19 kept under the marker.
    h.eq(20, #lines, 'lines kept')
    h.eq('[83 earlier lines dropped (output.max_lines = 20)]', lines[1], 'the marker')
    for i = 2, 19 do
      h.eq('n ' .. (80 + i), lines[i], 'line ' .. i)
    end
    h.ok(lines[20]:find('^%[exit 0'), 'the summary last: ' .. lines[20])
  end },

  { 'output: a run keeps the runs before it', function()
    h.setup()
    h.need('snippet/run')
    h.buffer({ 'print("first run")' })
    vim.cmd('KilnRun')
    h.wait_run()
    h.buffer({ 'print("second run")' })
    vim.cmd('KilnRun')
    h.wait_run()
    local lines = require('kiln.output').lines()
    h.eq('kiln run: [buffer]', lines[1], 'the first header')
    h.eq('first run', lines[2], 'the first output')
    h.ok(lines[3]:find('^%[exit 0'), 'the first summary: ' .. lines[3])
    h.eq('', lines[4], 'a blank line between runs')
    h.eq('kiln run: [buffer]', lines[5], 'the second header')
    h.eq('second run', lines[6], 'the second output')
    h.eq({ 'kiln run: [buffer]', 'second run' }, vim.list_slice(require('kiln.output').section_lines(), 1, 2),
      'the current section')
  end },

  { 'output: a traceback from a selection names the buffer line, and <CR> jumps there', function()
    h.setup()
    h.need('snippet/run')
    local buf = h.buffer({
      'print("not run")',
      'x = 1',
      'def f():',
      '    return undefined_name',
      'f()',
    })
    vim.api.nvim_buf_set_name(buf, vim.fn.tempname() .. '/calc.py')
    vim.cmd('3,5KilnRun')
    h.wait_run()
    local output = require('kiln.output')
    local lines = output.lines()
    -- The selection's line 2 is the buffer's line 4; its line 3 is line 5.
    local rows = {}
    for i, l in ipairs(lines) do
      if l:find('File "/code/snippet.py", line', 1, true) then
        table.insert(rows, i - 1)
      end
    end
    h.eq(2, #rows, 'two traceback lines name the snippet:\n' .. table.concat(lines, '\n'))
    local function label(row)
      local m = vim.api.nvim_buf_get_extmarks(output.buf(), output.mark_ns, { row, 0 }, { row, -1 },
        { details = true })
      for _, x in ipairs(m) do
        local vt = x[4] and x[4].virt_text
        if vt then
          return vt[1][1]
        end
      end
      return nil
    end
    h.eq('  -> calc.py:5 (<CR> jumps)', label(rows[1]), 'the call, line 3 of the selection')
    h.eq('  -> calc.py:4 (<CR> jumps)', label(rows[2]), 'the failing line, line 2 of the selection')
    -- <CR> on the second one, in the output window.
    local w = output.win()
    vim.api.nvim_set_current_win(w)
    vim.api.nvim_win_set_cursor(w, { rows[2] + 1, 0 })
    vim.cmd('execute "normal \\<CR>"')
    h.eq(buf, vim.api.nvim_get_current_buf(), 'the buffer is current')
    h.eq(4, vim.api.nvim_win_get_cursor(0)[1], 'the cursor is on line 4')
  end },

  { 'status: a run says running, then done with its exit and time, then nothing', function()
    h.setup({ status_done_ms = 1500 })
    h.need('snippet/run')
    local ev = status_events()
    local kiln = require('kiln')
    h.buffer({ 'sleep 1', 'echo done' }, 'sh')
    vim.cmd('KilnRun')
    h.eq('kiln: running', kiln.status(), 'while it runs')
    h.eq('running', kiln.status_info().state, 'status_info while it runs')
    h.wait(2000, function() return ev.count > 0 end, 'a KilnStatus event at the start')
    local before = ev.count
    h.wait_run()
    h.wait(2000, function() return ev.count > before end, 'a KilnStatus event after the end')
    h.ok(kiln.status():find('^kiln: done %(exit 0, %d+ ms%)$'), 'after the run: ' .. kiln.status())
    local info = kiln.status_info()
    h.eq('done', info.state, 'status_info after the run')
    h.ok(info.summary:find('^exit 0, %d+ ms$'), info.summary)
    before = ev.count
    h.wait(4000, function() return kiln.status() == '' and ev.count > before end,
      'the done state to pass, with a KilnStatus event: ' .. kiln.status())
  end },

  { 'status: killing the server mid-run and mid-intent clears the status with one message', function()
    h.setup_model('fake-stall')
    local ev = status_events()
    local kiln = require('kiln')
    h.buffer({ 'echo started', 'sleep 60' }, 'sh')
    vim.cmd('KilnRun')
    h.wait(15000, function() return has_line('started') end, 'the program to start')
    local code = h.buffer({ 'x = 1' })
    kiln.intent({ buf = code, text = 'print x' })
    h.wait(10000, function() return kiln.status():find('writing', 1, true) ~= nil end,
      'the intent writing: ' .. kiln.status())
    h.messages = {}
    local before = ev.count
    vim.loop.kill(require('kiln.client').pid(), 9)
    h.wait(5000, function() return require('kiln.run').current == nil end, 'the run to end')
    vim.wait(1000)
    local said = loud()
    h.eq(1, #said, 'one message, not one per feature:\n' .. table.concat(said, '\n'))
    h.ok(said[1]:find('the server exited (signal 9); the intent, the run stopped', 1, true), said[1])
    h.eq('', kiln.status(), 'the status line after the death')
    h.ok(ev.count > before, 'a KilnStatus event')
  end },

  { 'status: cancelling an intent while the model writes clears "writing"', function()
    h.setup_model('fake-stall')
    local kiln = require('kiln')
    local buf = h.buffer({ 'x = 1' })
    kiln.intent({ buf = buf, text = 'print x' })
    h.wait(10000, function() return kiln.status():find('writing', 1, true) ~= nil end, 'writing')
    local ev = status_events()
    vim.cmd('KilnCancel')
    h.wait(2000, function() return ev.count > 0 end, 'a KilnStatus event after the cancel')
    h.eq('', kiln.status(), 'the status line after the cancel')
  end },

  { 'status: two runs for one slot: the second says queued, running, done, in status() and the output window',
    function()
    -- One slot (sandbox.maxConcurrentRuns sent as an initialization
    -- option): a first run (sent here, not through :KilnRun) holds it, so
    -- :KilnRun's run waits in the server's queue (run/status).
    h.setup({ sandbox = { maxConcurrentRuns = 1 } })
    h.need('snippet/run')
    local client = require('kiln.client')
    local kiln = require('kiln')
    local first
    client.request('snippet/run', { language = 'bash', code = 'sleep 3' }, function(err, r)
      first = { err, r }
    end)
    -- Every state the status line went through, as the KilnStatus event
    -- (which redraws it) saw it, once each in order.
    local seen = {}
    vim.api.nvim_create_autocmd('User', {
      pattern = 'KilnStatus',
      callback = function()
        local s = kiln.status():gsub('%d+ ms', 'N ms')
        if s ~= '' and seen[#seen] ~= s then
          table.insert(seen, s)
        end
      end,
    })
    h.buffer({ 'echo second' }, 'sh')
    vim.cmd('KilnRun')
    h.wait(15000, function() return kiln.status() == 'kiln: queued (1st)' end,
      'the status line to say queued: ' .. kiln.status())
    h.eq({ state = 'queued', position = 1, text = 'kiln: queued (1st)' }, kiln.status_info(), 'status_info')
    h.ok(has_line('[queued: 1st in line for a sandbox slot; 1 of 1 busy]'),
      'the output window says so:\n' .. table.concat(require('kiln.output').lines(), '\n'))
    -- The output window's own status line shows it, with no user setup.
    local w = require('kiln.output').win()
    local shown = vim.api.nvim_eval_statusline(vim.wo[w].statusline, { winid = w, maxwidth = 80 }).str
    h.ok(shown:find('kiln: queued (1st)', 1, true), 'the output window shows it: ' .. shown)
    h.eq(nil, first, 'the first run still holds the slot')
    local last = h.wait_run()
    h.ok(first and first[2], 'the first run ended first: ' .. vim.inspect(first))
    h.ok(last and last.result and last.result.exitCode == 0, 'the queued run ran: ' .. vim.inspect(last))
    h.wait(2000, function() return #seen >= 3 end, 'three states: ' .. vim.inspect(seen))
    h.eq({ 'kiln: running', 'kiln: queued (1st)', 'kiln: running', 'kiln: done (exit 0, N ms)' }, seen,
      'the states, in order')
    shown = vim.api.nvim_eval_statusline(vim.wo[w].statusline, { winid = w, maxwidth = 80 }).str
    h.ok(shown:find('kiln: done (exit 0, ', 1, true), 'the output window shows done: ' .. shown)
    local lines = require('kiln.output').lines()
    local text = table.concat(lines, '\n')
    local q, r, o = text:find('[queued', 1, true), text:find('[running: a slot is free]', 1, true),
      text:find('second', 1, true)
    h.ok(q and r and o and q < r and r < o, 'queued, running, then its output:\n' .. text)
  end },
}

-- The history of the conversation (issues 18 and 36): :KilnHistory shows,
-- per request, the intent, the model's tokens, its explanation, the
-- verdict with its rules, the code that ran, each repair with its code,
-- the output, displays, workspace changes and the run's ledger (time, CPU,
-- peak memory), kept across runs; follow-up intents share the
-- conversation.
local h = _G.h

local function setup(model, extra)
  h.setup_model(model, extra)
  require('kiln.history').clear()
end

local function intent(text, buf)
  local done
  require('kiln').intent({ text = text, buf = buf, on_done = function(err, rv) done = { err = err, rv = rv } end })
  h.wait(30000, function() return done ~= nil end, 'the proposal')
  h.eq(nil, done.err, 'intent error')
  return done.rv
end

-- The pane's lines, with run durations made comparable.
local function pane()
  local w = require('kiln.history').win()
  h.ok(w, 'the history pane is shown')
  local lines = vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(w), 0, -1, false)
  for i, l in ipairs(lines) do
    lines[i] = l:gsub('%d+ ms%]', 'N ms]')
    if l:find('^  ledger: ') or l:find('^  tokens: ') then
      lines[i] = l:gsub('%d+%.?%d*', 'N')
    end
  end
  return lines
end

local PROGRAM_WRONG = {
  '    | total = 0',
  '    | for n in range(3):',
  '    |     total += n',
  '    | print(totl)',
}

local function concat(...)
  local out = {}
  for _, t in ipairs({ ... }) do
    vim.list_extend(out, type(t) == 'table' and t or { t })
  end
  return out
end

return {
  { 'history: the intent, its explanation, the code that ran, each repair and the output, kept', function()
    setup('fake-repair', { repair_attempts = 3, auto_repair = true })
    local buf = h.buffer({ '' })
    intent('sum 0..2', buf)
    require('kiln.intent').accept_all(buf)
    vim.cmd('KilnRun')
    h.wait_run()
    -- A later run, of another buffer: the first one's output stays.
    h.buffer({ 'print("later")' })
    vim.cmd('KilnRun')
    h.wait_run()
    vim.cmd('KilnHistory')
    local want = concat({
      '#1 intent: sum 0..2',
      '  proposal p1, verdict allow',
      '  tokens: N prompt, N completion',
      '  explanation:',
      '    It prints the result.',
      '  code:',
    }, PROGRAM_WRONG, '  ran proposal p1:', PROGRAM_WRONG, {
      '  -- attempt 1 running --',
      '  output:',
      '    > Traceback (most recent call last):',
      '    >   File "/code/snippet.py", line 4, in <module>',
      '    >     print(totl)',
      '    >           ^^^^',
      "    > NameError: name 'totl' is not defined. Did you mean: 'total'?",
      '  -- attempt 1 ran: it exited with status 1 --',
      '  -- attempt 2 repairing --',
      '  -- attempt 2 repaired (verdict allow) --',
      '    | total = 0',
      '    | for n in range(3):',
      '    |     total += n',
      '    | print(total)',
      '  -- attempt 2 running --',
      '  output:',
      '    > 3',
      '  -- attempt 2 ran --',
      '  [exit 0, N ms]',
      '  ledger: N ms, CPU N ms, peak memory N MiB (largest process) (the last of N attempts)',
      '',
      '#2 run: [buffer]',
      '  ran run: [buffer]:',
      '    | print("later")',
      '  output:',
      '    > later',
      '  [exit 0, N ms]',
      '  ledger: N ms, CPU N ms, peak memory N MiB (largest process)',
    })
    h.eq(want, pane(), 'the history pane')
    vim.cmd('KilnHistory')
    h.eq(nil, require('kiln.history').win(), ':KilnHistory again hides it')
  end },

  { 'history: a follow-up intent goes to the same conversation; the pane grows while shown', function()
    setup('fake-coder')
    local buf = h.buffer({ '' })
    vim.cmd('KilnHistory')
    intent('greet', buf)
    require('kiln.intent').reject_all(buf)
    intent('greet again', buf)
    vim.wait(50)
    h.eq({
      '#1 intent: greet',
      '  proposal p1, verdict allow',
      '  tokens: N prompt, N completion',
      '  explanation:',
      '    It prints the result.',
      '  code:',
      "    | print('hello from kiln')",
      '',
      '#2 intent: greet again',
      '  proposal p2, verdict allow',
      '  tokens: N prompt, N completion',
      '  explanation:',
      '    Continuing from the previous step, it prints the result.',
      '  code:',
      "    | print('hello from kiln')",
    }, pane(), 'the history pane')
  end },

  { 'history: a denied proposal shows its verdict and the rules that denied it', function()
    setup('fake-deny')
    local buf = h.buffer({ '' })
    intent('fetch a page', buf)
    vim.cmd('KilnHistory')
    h.eq({
      '#1 intent: fetch a page',
      '  proposal p1, verdict deny',
      '  tokens: N prompt, N completion',
      '  explanation:',
      '    It prints the result.',
      '  rules:',
      '    PY-IMPORT-NETWORK: imports a network module: the sandbox has no network (line 1)',
      '  code:',
      '    | import socket',
      "    | s = socket.create_connection(('example.com', 80))",
      '    | print(s)',
    }, pane(), 'the history pane')
    -- :KilnHistory clear forgets it.
    vim.cmd('KilnHistory clear')
    h.eq({ '' }, pane(), 'cleared')
  end },

  { 'history: a session run\'s output, display, workspace changes and ledger, in order', function()
    h.in_project(function()
      setup(nil, { session = true })
      h.need('session/open')
      h.buffer({ 'import pandas as pd', 'open("notes.txt", "w").write("n\\n")', 'print("wrote")',
        'pd.DataFrame({"a": [1, 2]})' })
      vim.cmd('KilnRun')
      h.wait_run()
      vim.cmd('KilnHistory')
      local got = pane()
      local want = {
        '#1 run: %[buffer%]',
        '  ran run: %[buffer%]:',
        '    | import pandas as pd', '    | open%("notes%.txt", "w"%)%.write%("n\\n"%)', '    | print%("wrote"%)',
        '    | pd%.DataFrame%({"a": %[1, 2%]}%)',
        '  output:',
        '    > wrote',
        '  display 1: text/html %(%d+ bytes%) saved to %S+/display%-1%.html  %[:KilnArtifact 1 opens it%]',
        '  output:',
        '    >    a', '    > 0  1', '    > 1  2',
        '  %[exit 0, N ms%]',
        '  %[the run changed 1 file in the workspace; nothing is written: :KilnChanges reviews them%]',
        '    created  notes%.txt',
        '  ledger: N ms, CPU N ms, peak memory N MiB %(largest process%)',
      }
      for i = 1, math.max(#want, #got) do
        h.ok(want[i] and got[i] and got[i]:find('^' .. want[i] .. '$'), ('line %d: want %s, got %s\nall:\n%s')
          :format(i, tostring(want[i]), tostring(got[i]), table.concat(got, '\n')))
      end
    end)
  end },

  { 'history: code and the rules are shown with control characters made visible', function()
    setup()
    h.need('snippet/run')
    h.buffer({ 'x = 1  # \226\128\174 reversed', 'print(x)' })
    vim.cmd('KilnRun')
    h.wait_run()
    vim.cmd('KilnHistory')
    local got = pane()
    h.eq({ '#1 run: [buffer]', '  ran run: [buffer]:', '    | x = 1  # <U+202E> reversed', '    | print(x)' },
      vim.list_slice(got, 1, 4), 'the code, made visible')
    for _, l in ipairs(got) do
      h.ok(not l:find('\226\128\174', 1, true), 'no raw U+202E: ' .. l)
    end
  end },
}

-- Run anyway, on purpose (issue 36): a run of the person's own code that
-- the validator denies names every rule; where the server allows an
-- override (validator.allowOverride, said as the refusal's
-- data.overrideAllowed) the plugin asks once and, on yes, sends the code
-- again with "override": true; where it does not, it says how to allow it.
-- Against the real server.
local h = _G.h

local answer_select = h.answer_select

local CODE = { 'import socket', 'import ctypes', "print('ran anyway', socket.AF_INET == 2)" }

-- The refused run of CODE, and the question that follows it.
local function refused(allow, answer)
  h.setup({ validator = { allowOverride = allow } })
  h.need('snippet/run')
  local asked = answer_select(answer)
  h.buffer(CODE)
  vim.cmd('KilnRun')
  h.wait_run()
  -- The question comes on the next loop turn; a second run may follow.
  vim.wait(200, function() return false end)
  h.wait_run()
  return asked
end

return {
  { 'override: allowed, the refusal names every rule and asks; yes runs the code anyway', function()
    local asked = refused(true, '^Run it anyway$')
    h.eq(1, #asked, 'asked once')
    h.eq({ 'Run it anyway', 'Do not run it' }, asked[1].items, 'the choices')
    local p = asked[1].prompt
    h.ok(p:find('PY-IMPORT-NETWORK (line 1: imports a network module: the sandbox has no network)', 1, true)
      and p:find('PY-IMPORT-NATIVE (line 2: ', 1, true) and p:find('Run it anyway in the sandbox?', 1, true),
      'the question names both rules: ' .. p)
    h.ok(h.message('It did not run: you are asked whether to run it anyway'), 'the refusal says it asks: ' ..
      vim.inspect(h.messages))
    local out = require('kiln.output').lines()
    local text = table.concat(out, '\n')
    local first = text:find('[the validator denied this code: PY-IMPORT-NETWORK', 1, true)
    local again = text:find('kiln run: [buffer] (run anyway: you overrode the validator)', 1, true)
    h.ok(first and again and first < again, 'refused, then run anyway:\n' .. text)
    h.eq('ran anyway True', out[#out - 1], 'the code ran:\n' .. text)
    h.ok(out[#out]:find('^%[exit 0, %d+ ms%]$'), out[#out])
    h.eq(0, require('kiln.run').last.run.exitCode, 'the run anyway ended well')
  end },

  { 'override: allowed, "do not run it" runs nothing', function()
    local asked = refused(true, nil)
    h.eq(1, #asked, 'asked once')
    local text = table.concat(require('kiln.output').lines(), '\n')
    h.ok(not text:find('ran anyway', 1, true) and not text:find('run anyway:', 1, true), 'nothing ran:\n' .. text)
    h.ok(h.message('not run: the code the validator denied stays unrun'), 'said')
  end },

  { 'override: not allowed, nothing is offered and the message says how to allow it', function()
    local asked = refused(false, '^Run it anyway$')
    h.eq(0, #asked, 'nothing asked')
    local m = h.message('the validator denied this code')
    h.ok(m and m.msg:find('PY-IMPORT-NETWORK (line 1: ', 1, true) and
      m.msg:find('PY-IMPORT-NATIVE (line 2: ', 1, true) and
      m.msg:find('set setup{ validator = { allowOverride = true } }$'), 'every rule, and how: ' .. (m and m.msg or ''))
    local text = table.concat(require('kiln.output').lines(), '\n')
    h.ok(not text:find('ran anyway', 1, true), 'nothing ran:\n' .. text)
  end },

  { 'override: a denied proposal is never offered a run anyway', function()
    h.setup_model('fake-deny', { validator = { allowOverride = true } })
    local asked = answer_select('^Run it anyway$')
    local buf = h.buffer({ '' })
    local done
    require('kiln').intent({ text = 'fetch a page', on_done = function(err, rv) done = { err, rv } end })
    h.wait(30000, function() return done ~= nil end, 'the proposal')
    h.eq('deny', done[2].proposal.verdict, 'verdict')
    vim.cmd('KilnRun')
    vim.wait(200, function() return false end)
    h.eq(nil, require('kiln.run').current, 'nothing runs')
    h.eq(0, #asked, 'nothing asked')
    h.eq({ '' }, h.lines(buf), 'the buffer untouched')
  end },

  { 'override: the rules are shown with control characters made visible', function()
    h.setup()
    local msg = require('kiln.intent').denied_message({
      { severity = 1, code = 'X-\27[31mRED', message = 'bad \27[2K\r line \226\128\174 rev \7',
        range = { start = { line = 0, character = 0 } } },
      { severity = 2, code = 'W-1', message = 'warn\nnext\255', range = { start = { line = 2, character = 0 } } },
    }, 'this code', { override = true, override_allowed = true })
    h.eq('the validator denied this code: X-^[[31mRED (line 1: bad ^[[2K^M line <U+202E> rev ^G); ' ..
      'also warned: W-1 (line 3: warn^Jnext\\xFF). It did not run: you are asked whether to run it anyway', msg,
      'the message')
  end },
}

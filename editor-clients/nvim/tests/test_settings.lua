-- Every provider and setting from setup{} (issue 36): the server's llm
-- members pass through as initialization options (Anthropic, Bedrock
-- with its region, ...); the API key comes from a command (as `pass`
-- gives one) or a named environment variable, reaches the server in its
-- environment, and is shown nowhere: not in the options, not in the
-- initialization options, not in :checkhealth kiln, not in a message.
-- Against the real server and the fake model server, which checks the
-- key (fake-401) and Bedrock's SigV4 signature.
local h = _G.h

local KEY = 'sk-good'

-- A key file and a command that prints it, as `pass show NAME` does.
local function key_cmd(key)
  local f = vim.fn.tempname()
  h.write_file(f, key .. '\n')
  return { 'cat', f }
end

-- :KilnIntent for a fresh buffer; returns err, the review.
local function ask()
  local buf = h.buffer({ '' })
  local done
  require('kiln').intent({ buf = buf, text = 'greet', on_done = function(err, rv) done = { err = err, rv = rv } end })
  h.wait(30000, function() return done ~= nil end, 'the answer')
  return done.err, done.rv
end

-- The requests the fake model got since the last call (GET /_requests).
local function fake_requests()
  local out = vim.fn.system({ 'curl', '-sS', '-m', '5', h.fake_model() .. '/_requests' })
  h.ok(vim.v.shell_error == 0, 'GET /_requests: ' .. out)
  return vim.fn.json_decode(out)
end

-- Nothing the plugin shows or keeps in plain sight holds the key.
local function key_nowhere(key)
  local client = require('kiln.client')
  h.ok(not vim.inspect(require('kiln.config').options):find(key, 1, true), 'not in the options')
  local c = client.client()
  h.ok(c, 'the server runs')
  h.ok(not vim.inspect(c.config.init_options):find(key, 1, true), 'not in initializationOptions: ' ..
    vim.inspect(c.config.init_options))
  h.ok(not vim.inspect(h.messages):find(key, 1, true), 'not in a message')
  vim.cmd('checkhealth kiln')
  local text = table.concat(h.lines(0), '\n')
  h.ok(text:find('API key: from ', 1, true), 'the health check says where the key comes from:\n' .. text)
  h.ok(not text:find(key, 1, true), 'the health check does not show it:\n' .. text)
  vim.cmd('bwipeout!')
  return text
end

return {
  { 'settings: api_key_cmd gives the key to the server (openai), and nothing shows it', function()
    h.ok(not vim.env.KILN_API_KEY, 'no KILN_API_KEY in the tests\' environment')
    -- Without the key, the fake refuses: the check below is the key's.
    h.setup_model('fake-401', { llm = { provider = 'openai' } })
    local err = ask()
    h.ok(err and tostring(err.message):find('401') or tostring(err and err.message):find('nauthori'),
      'refused without a key: ' .. vim.inspect(err))
    require('kiln.client').stop_sync(3000)
    h.messages = {}
    h.setup_model('fake-401', { llm = { provider = 'openai', api_key_cmd = key_cmd(KEY) } })
    local rv
    err, rv = ask()
    h.eq(nil, err, 'the intent with the key')
    h.ok(rv and rv.proposal.proposalId, 'a proposal')
    local seen
    for _, r in ipairs(fake_requests()) do
      if r.method == 'POST' then
        seen = r.headers.authorization
      end
    end
    h.eq('Bearer ' .. KEY, seen, 'the key reached the model server')
    local text = key_nowhere(KEY)
    h.ok(text:find('API key: from api_key_cmd `cat ', 1, true), text)
  end },

  { 'settings: anthropic with api_key_env; the key goes as x-api-key', function()
    vim.env.KILN_TEST_ANTHROPIC_KEY = KEY
    h.setup_model('fake-401', { llm = { provider = 'anthropic', api_key_env = 'KILN_TEST_ANTHROPIC_KEY' } })
    local err, rv = ask()
    vim.env.KILN_TEST_ANTHROPIC_KEY = nil
    h.eq(nil, err, 'the intent')
    h.ok(rv and rv.proposal.proposalId, 'a proposal')
    local posts = {}
    for _, r in ipairs(fake_requests()) do
      if r.method == 'POST' then
        table.insert(posts, { r.path, r.headers['x-api-key'] })
      end
    end
    h.eq({ '/v1/messages', KEY }, posts[#posts], 'Anthropic\'s endpoint, with the key')
    key_nowhere(KEY)
  end },

  { 'settings: bedrock with region and profile: the profile\'s keys sign, for that region', function()
    local creds = vim.fn.tempname()
    h.write_file(creds, table.concat({
      '[default]', 'aws_access_key_id = AKIDWRONG', 'aws_secret_access_key = wrong',
      '[work]', 'aws_access_key_id = AKIDFAKEKILN', 'aws_secret_access_key = fake/secret+key', '',
    }, '\n'))
    local env = { AWS_SHARED_CREDENTIALS_FILE = creds, AWS_CONFIG_FILE = creds .. '.none' }
    local llm = { provider = 'bedrock', region = 'eu-west-3', profile = 'work' }
    h.setup_model('fake-coder', { cmd_env = env, llm = llm })
    local err, rv = ask()
    h.eq(nil, err, 'the intent, signed with the work profile\'s keys')
    h.ok(rv and rv.proposal.proposalId, 'a proposal')
    local sig
    for _, r in ipairs(fake_requests()) do
      if r.method == 'POST' and r.sigv4 then
        sig = r.sigv4
      end
    end
    h.ok(sig and sig.ok, 'the signature checked: ' .. vim.inspect(sig))
    h.ok(sig.scope:find('/eu%-west%-3/bedrock/aws4_request$'), 'signed for the region: ' .. sig.scope)
    h.eq('AKIDFAKEKILN', sig.access, 'with the profile\'s key')
    local io = require('kiln.client').client().config.init_options
    h.eq({ provider = 'bedrock', region = 'eu-west-3', url = h.fake_model(), model = 'fake-coder' }, io.llm,
      'the llm initialization options: the server\'s members only')
    -- Without the profile, the default section's keys are refused.
    require('kiln.client').stop_sync(3000)
    llm.profile = nil
    h.setup_model('fake-coder', { cmd_env = env, llm = llm })
    err = ask()
    h.ok(err, 'refused with the default profile\'s keys')
  end },

  { 'settings: an api_key_cmd that fails is an error naming it; no server starts', function()
    h.setup({ llm = { provider = 'openai', api_key_cmd = { 'sh', '-c', 'echo "no such entry" >&2; exit 3' } } })
    local c, err = require('kiln.client').ensure(5000)
    h.eq(nil, c, 'no server')
    h.eq('llm.api_key_cmd failed (exit 3): no such entry: the server was not started', err, 'the reason')
  end },

  { 'settings: llm.apiKey written in setup{} is taken out of the options and still reaches the server', function()
    h.setup_model('fake-401', { llm = { provider = 'openai', apiKey = KEY } })
    h.ok(h.message('llm.apiKey in setup{} is kept out of the options'), 'a warning: ' .. vim.inspect(h.messages))
    h.messages = {}
    local err = ask()
    h.eq(nil, err, 'the intent with the key')
    key_nowhere(KEY)
  end },
}

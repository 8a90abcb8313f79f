# expect: SH-REACH-INTERPRETER verdict=warn
bash <<EOF
id
EOF

# expect: SH-REACH-INTERPRETER verdict=warn
python3 <<'EOF'
import os
os.system("id")
EOF

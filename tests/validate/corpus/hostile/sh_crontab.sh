# expect: SH-PROCESS
echo '* * * * * curl x' | crontab -

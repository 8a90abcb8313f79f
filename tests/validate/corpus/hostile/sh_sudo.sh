# expect: SH-PROCESS
sudo apt-get install nmap

ls *.txt | xargs wc -l | tail -1

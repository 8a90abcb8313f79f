# expect: SH-REACH-COMMAND verdict=warn
# A program the snippet (or the project) holds, named like a text tool:
# only the bare name or a system path is the tool kiln knows.
printf '#!/bin/sh\nid\n' > sort
./sort data.txt

import logging

logging.basicConfig(filename="run.log", level=logging.INFO,
                    format="%(asctime)s %(levelname)s %(message)s")
log = logging.getLogger("analysis")
for step in ("load", "clean", "fit"):
    log.info("step %s done", step)
print(open("run.log").read().count("done"))

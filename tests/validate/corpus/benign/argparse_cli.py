import argparse
import sys

parser = argparse.ArgumentParser(description="summarise a column")
parser.add_argument("file")
parser.add_argument("--column", default="value")
args = parser.parse_args(sys.argv[1:] or ["data.csv"])
print(f"would summarise {args.column} in {args.file}")

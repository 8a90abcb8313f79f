from enum import Enum, auto

class State(Enum):
    IDLE = auto()
    RUNNING = auto()
    DONE = auto()

transitions = {State.IDLE: State.RUNNING, State.RUNNING: State.DONE}
state = State.IDLE
while state in transitions:
    print(state.name)
    state = transitions[state]
print(state.name)

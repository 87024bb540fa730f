"""LLVM IR as text, for the CPU emitter: loads and stores of array elements, ``codegen.walk``'s
assignments as lines, and ``IrBuilder``, which writes the lane machinery (``cpu.scheduler``)
with its variables in stack slots (LLVM promotes them to registers) and structured control flow,
each temporary named once. Text, not llvmlite's IR builder: the golden files and the cache keep
the very text that is compiled, and a reader can diff it.
"""

from __future__ import annotations

import itertools
from contextlib import contextmanager

from hawk.ir import DType

from .llvm_ops import MEMORY_TYPES

__all__ = ["IrBuilder", "load_element", "store_element", "expand", "indent"]


def load_element(lines: list[str], name: str, dtype: DType, pointer: str, index: str) -> str:
    """Append the load of element ``index`` of ``pointer`` as register value ``%name``."""
    memory = MEMORY_TYPES[dtype]
    target = f"%{name}" if dtype is not DType.BOOL else f"%{name}.byte"
    lines += [f"%{name}.at = getelementptr {memory}, ptr {pointer}, i64 {index}",
              f"{target} = load {memory}, ptr %{name}.at"]
    if dtype is DType.BOOL:
        lines.append(f"%{name} = trunc i8 {target} to i1")
    return f"%{name}"


def store_element(lines: list[str], name: str, dtype: DType, value: str, pointer: str,
           index: str) -> None:
    """Append the store of register value ``value`` to element ``index`` of ``pointer``."""
    memory = MEMORY_TYPES[dtype]
    if dtype is DType.BOOL:
        lines.append(f"%{name}.byte = zext i1 {value} to i8")
        value = f"%{name}.byte"
    lines += [f"%{name}.at = getelementptr {memory}, ptr {pointer}, i64 {index}",
              f"store {memory} {value}, ptr %{name}.at"]


def expand(assignments) -> list[str]:
    """``codegen.walk``'s assignments as lines: an expression's last line is the value."""
    lines = []
    for a in assignments:
        *before, last = a.expression.split("\n")
        lines += [*before, f"%{a.name} = {last}"]
    return lines


def indent(lines: list[str]) -> list[str]:
    return [line if line.endswith(":") else f"  {line}" for line in lines]


class IrBuilder:
    """LLVM IR text for the lane machinery: variables in stack slots, structured control flow
    (``if_``, ``loop``, ``break_``, ``continue_``), each temporary named once."""

    def __init__(self):
        self.lines: list[str] = []
        self.slots: list[str] = []
        self.types: dict[str, str] = {}
        self._count = itertools.count()
        self._loops: list[tuple[str, str]] = []

    def fresh(self, hint: str = "r") -> str:
        return f"{hint}{next(self._count)}"

    def do(self, text: str) -> str:
        name = f"%{self.fresh()}"
        self.lines.append(f"  {name} = {text}")
        return name

    def i64(self, opcode: str, x, y) -> str:
        """``x opcode y`` on int64 values (``add``, ``sub``, ``mul``, ``sdiv``...)."""
        return self.do(f"{opcode} i64 {x}, {y}")

    def cmp(self, predicate: str, x, y) -> str:
        """``x predicate y`` on int64 values (``slt``, ``eq``...), an i1."""
        return self.do(f"icmp {predicate} i64 {x}, {y}")

    def not_(self, x: str) -> str:
        return self.do(f"xor i1 {x}, true")

    def both(self, x: str, y: str) -> str:
        return self.do(f"and i1 {x}, {y}")

    def either(self, x: str, y: str) -> str:
        return self.do(f"or i1 {x}, {y}")

    def line(self, text: str) -> None:
        self.lines.append(f"  {text}")

    def label(self, name: str) -> None:
        self.lines.append(f"{name}:")

    def var(self, name: str, kind: str, initial: str | None = None) -> None:
        self.slots.append(f"  %{name}.slot = alloca {kind}")
        self.types[name] = kind
        if initial is not None:
            self.set(name, initial)

    def get(self, name: str) -> str:
        return self.do(f"load {self.types[name]}, ptr %{name}.slot")

    def set(self, name: str, value: str) -> None:
        self.line(f"store {self.types[name]} {value}, ptr %{name}.slot")

    def add(self, name: str, amount: str) -> None:
        self.set(name, self.do(f"add i64 {self.get(name)}, {amount}"))

    def at(self, kind: str, pointer: str, index: str) -> str:
        return self.do(f"getelementptr {kind}, ptr {pointer}, i64 {index}")

    def read(self, kind: str, pointer: str, index: str) -> str:
        return self.do(f"load {kind}, ptr {self.at(kind, pointer, index)}")

    def write(self, kind: str, pointer: str, index: str, value: str) -> None:
        self.line(f"store {kind} {value}, ptr {self.at(kind, pointer, index)}")

    def jump(self, label: str) -> None:
        """A branch, then a fresh block for what follows (unreachable unless labelled)."""
        self.line(f"br label %{label}")
        self.label(self.fresh("after"))

    @contextmanager
    def if_(self, condition: str):
        then, end = self.fresh("then"), self.fresh("end")
        self.line(f"br i1 {condition}, label %{then}, label %{end}")
        self.label(then)
        yield
        self.line(f"br label %{end}")
        self.label(end)

    def if_else(self, condition: str, then, otherwise) -> None:
        yes, no, end = self.fresh("then"), self.fresh("else"), self.fresh("end")
        self.line(f"br i1 {condition}, label %{yes}, label %{no}")
        self.label(yes)
        then()
        self.line(f"br label %{end}")
        self.label(no)
        otherwise()
        self.line(f"br label %{end}")
        self.label(end)

    @contextmanager
    def loop(self):
        """``while True``: leave it with ``break_``; ``continue_`` starts it again."""
        head, end = self.fresh("loop"), self.fresh("exit")
        self.line(f"br label %{head}")
        self.label(head)
        self._loops.append((head, end))
        yield
        self._loops.pop()
        self.line(f"br label %{head}")
        self.label(end)

    def while_(self, condition):
        """``while condition():`` as a ``loop`` that breaks when the condition fails."""
        builder = self

        @contextmanager
        def body():
            with builder.loop():
                with builder.if_(builder.do(f"xor i1 {condition()}, true")):
                    builder.break_()
                yield

        return body()

    def range_(self, name: str, start: str, stop: str):
        """``for name in range(start, stop)`` (``name`` a variable; ``stop`` read once)."""
        builder = self
        self.var(name, "i64") if name not in self.types else None

        @contextmanager
        def body():
            builder.set(name, start)
            with builder.while_(lambda: builder.do(f"icmp slt i64 {builder.get(name)}, "
                                                   f"{stop}")):
                yield builder.get(name)
                builder.add(name, "1")

        return body()

    def break_(self) -> None:
        self.jump(self._loops[-1][1])

    def continue_(self) -> None:
        self.jump(self._loops[-1][0])

    def smin(self, x, y) -> str:
        """The smaller of two int64 values."""
        return self.do(f"select i1 {self.do(f'icmp slt i64 {x}, {y}')}, i64 {x}, i64 {y}")

    def smax(self, x, y) -> str:
        """The larger of two int64 values."""
        return self.do(f"select i1 {self.do(f'icmp sgt i64 {x}, {y}')}, i64 {x}, i64 {y}")

"""Loading a flight recorder dump's pickle without running anything in it.

Why a module: dumps are what users copy off production clusters, and a pickle can name any global and call it
(``__reduce__``), so ``pickle.loads`` of a dump runs whatever its author chose. Two readers, neither able to call
anything:

- :class:`DumpUnpickler` for PyTorch's own dumps: :mod:`pickle`'s unpickler with every global refused
  (:data:`ALLOWED_GLOBALS` is empty: ``FlightRecorder::dump_dict`` is pickled by ``torch::jit::Pickler`` with
  ``tag_aggregates=false`` from generic ``c10::Dict`` / ``c10::List`` of strings, ints, floats, booleans, None and
  tuples, which pickle as plain opcodes, no GLOBAL), and persistent ids refused too;
- :func:`parse_header` for the header of our fixed-layout dumps (:mod:`sim.debug.dumpformat`): a small stack machine
  that knows only the opcodes our writer emits there (:mod:`sim.debug.writer`) and refuses any other.
"""
from __future__ import annotations

import io
import pickle
import struct

ALLOWED_GLOBALS: frozenset = frozenset()      # (module, name) a dump may name: none (the module docstring)


class RefusedPickle(pickle.UnpicklingError):
    """A pickle that asks for something a flight recorder dump never holds (a global, a persistent id)."""


class DumpUnpickler(pickle.Unpickler):
    """:class:`pickle.Unpickler` that builds dicts, lists, tuples, strings, bytes, numbers, booleans and None only."""

    def find_class(self, module, name):
        if (module, name) in ALLOWED_GLOBALS:
            return super().find_class(module, name)
        raise RefusedPickle(f"refused: the pickle asks for the global {str(module)[:60]}.{str(name)[:60]} (a flight "
                            f"recorder dump holds only dicts, lists, tuples, strings, numbers and None)")

    def persistent_load(self, pid):
        raise RefusedPickle("refused: the pickle holds a persistent id (a flight recorder dump has none)")


class _Capped(io.RawIOBase):
    """A file read through at most ``limit`` bytes: past them the read fails (a file that grew, or a special file
    whose size says nothing)."""

    def __init__(self, raw, limit: int, error):
        self.raw, self.left, self.error = raw, limit, error

    def readable(self):
        return True

    def readinto(self, b):
        n = self.raw.readinto(b)
        self.left -= n or 0
        if self.left < 0:
            raise self.error
        return n


def load_dump_pickle(f, limit: int, error: Exception):
    """The object pickled in the open binary file ``f`` (streamed, 128 kB at a time, at most ``limit`` bytes read,
    else ``error`` is raised), by :class:`DumpUnpickler`."""
    return DumpUnpickler(io.BufferedReader(_Capped(f, limit, error), 1 << 17)).load()


# ------------------------------------------------------------------------------------ our header, no pickle
class HeaderError(ValueError):
    """Bytes that are not a header as our writer emits it."""


_I4 = struct.Struct("<i")
_U4 = struct.Struct("<I")


_KNOWN: dict = {}                    # a prefix every dump shares -> the parser's state after it (stack, marks, memo)


def parse_header(data: bytes, known: bytes = b"") -> tuple[object, list]:
    """The object of a pickle made of the opcodes our writer emits in a dump's header (PROTO 2, EMPTY_DICT,
    EMPTY_LIST, MARK, BINUNICODE, BININT, BINPUT, BINGET, POP, TUPLE2, APPENDS, SETITEMS, STOP), and its memo as a
    list by position (positions 0, 1, ... with none left out, as our writer puts them); HeaderError for any other
    opcode or a malformed one. Nothing is called, nothing imported. ``known``: a prefix many headers share
    (:data:`sim.debug.dumpformat.FIXED_HEAD`), parsed once and its state reused when ``data`` starts with it."""
    if known and data[:len(known)] == known:
        got = _KNOWN.get(known)
        if got is None:
            if len(_KNOWN) > 4:
                _KNOWN.clear()
            got = _KNOWN[known] = _run(known, 2, [], [], {}, stop=False)
        stack, marks, memo = got
        stack = [x.copy() if isinstance(x, (list, dict)) else x for x in stack]
        return _with_memo(*_run(data, len(known), stack, list(marks), dict(memo)))
    if data[:2] != b"\x80\x02":
        raise HeaderError("not protocol 2")
    return _with_memo(*_run(data, 2, [], [], {}))


def _with_memo(top, memo: dict) -> tuple[object, list]:
    try:
        return top, [memo[i] for i in range(len(memo))]
    except KeyError:
        raise HeaderError("the memo's positions are not 0, 1, ... in order") from None


def _run(data: bytes, i: int, stack: list, marks: list, memo: dict, stop: bool = True):
    """The opcodes of ``data`` from ``i`` on: the object at STOP and the memo, or (``stop`` False) the state at
    the end."""
    n = len(data)
    try:
        while i < n:
            op = data[i]
            i += 1
            if op == 0x58:                                         # X BINUNICODE
                size = _U4.unpack_from(data, i)[0]
                i += 4
                if i + size > n:
                    raise HeaderError("a string runs past the header")
                stack.append(bytes(data[i:i + size]).decode("utf-8"))
                i += size
            elif op == 0x71:                                       # q BINPUT
                memo[data[i]] = stack[-1]
                i += 1
            elif op == 0x68:                                       # h BINGET
                stack.append(memo[data[i]])
                i += 1
            elif op == 0x4A:                                       # J BININT
                stack.append(_I4.unpack_from(data, i)[0])
                i += 4
            elif op == 0x30:                                       # 0 POP (an object, never a mark: pickle's
                if not stack or (marks and marks[-1] == len(stack)):  # POP of a bare mark drops the mark)
                    raise HeaderError("POP with nothing to pop")
                stack.pop()
            elif op == 0x28:                                       # ( MARK
                marks.append(len(stack))
            elif op == 0x7D:                                       # } EMPTY_DICT
                stack.append({})
            elif op == 0x5D:                                       # ] EMPTY_LIST
                stack.append([])
            elif op == 0x86:                                       # TUPLE2
                b, a = stack.pop(), stack.pop()
                stack.append((a, b))
            elif op == 0x65:                                       # e APPENDS
                k = marks.pop()
                items = stack[k:]
                del stack[k:]
                if not isinstance(stack[-1], list):
                    raise HeaderError("APPENDS to a non-list")
                stack[-1].extend(items)
            elif op == 0x75:                                       # u SETITEMS
                k = marks.pop()
                items = stack[k:]
                del stack[k:]
                target = stack[-1]
                if not isinstance(target, dict) or len(items) % 2:
                    raise HeaderError("SETITEMS to a non-dict")
                for j in range(0, len(items), 2):
                    target[items[j]] = items[j + 1]
            elif op == 0x2E:                                       # . STOP
                if len(stack) != 1 or marks:
                    raise HeaderError("STOP with a stack left over")
                return stack[0], memo
            else:
                raise HeaderError(f"opcode {op:#04x} at byte {i - 1} is not one our writer emits")
    except (IndexError, KeyError, TypeError, struct.error, UnicodeDecodeError) as e:
        raise HeaderError(f"malformed at byte {i}: {type(e).__name__}") from None
    if not stop:
        return stack, marks, memo
    raise HeaderError("no STOP")

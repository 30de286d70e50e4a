"""Read the shared libraries of a native FMU (ELF, Mach-O, PE) and write a universal Mach-O.

What a binary exports, what it needs from other libraries, and for which architecture it was
made, read from the file itself: the checks of a binary that cannot run on this machine (macOS)
and of the others alike (tests/test_cross_platforms.py). `universal` joins thin Mach-O
libraries into one universal ("fat") file: FMI 2.0's binaries/darwin64 holds one library for
both x86_64 and arm64 Macs.

Formats, from their public specifications: ELF-64 (the System V gABI: section headers,
.dynsym, .dynamic's DT_NEEDED), Mach-O (<mach-o/loader.h>: LC_SYMTAB and nlist_64,
LC_LOAD_DYLIB; <mach-o/fat.h>: the big-endian fat header and fat_arch records), PE32+ (the
Microsoft PE/COFF specification: the export and import directories).
"""
import struct
from dataclasses import dataclass, field

from ..errors import FmuMbError

#: Mach-O CPU types (<mach/machine.h>)
CPU_X86_64, CPU_ARM64 = 0x01000007, 0x0100000C
MACHO_ARCH = {CPU_X86_64: "x86_64", CPU_ARM64: "arm64"}
ELF_ARCH = {62: "x86_64", 183: "aarch64"}
PE_ARCH = {0x8664: "x86_64", 0xAA64: "aarch64"}

FAT_MAGIC = 0xCAFEBABE
MH_MAGIC_64 = 0xFEEDFACF
#: slice alignment of a universal file (2^14: the arm64 page size, also used for x86_64)
FAT_ALIGN = 14


@dataclass
class Library:
    """One architecture's view of a shared library."""
    format: str                     # "elf", "macho", "pe"
    arch: str                       # "x86_64", "aarch64"/"arm64"
    exports: set = field(default_factory=set)     # defined, visible symbols
    undefined: set = field(default_factory=set)   # symbols resolved by other libraries
    needed: list = field(default_factory=list)    # the libraries it loads (DT_NEEDED, dylibs, DLLs)
    name: str = ""                                # its own name (DT_SONAME, LC_ID_DYLIB)


def read(data):
    """The Library of each architecture in `data` (bytes of a .so, .dylib or .dll): a list of
    one, or of one per slice of a universal Mach-O. Raises FmuMbError for another format."""
    if data[:4] == b"\x7fELF":
        return [_elf(data)]
    if len(data) >= 8 and struct.unpack_from(">I", data)[0] == FAT_MAGIC:
        n = struct.unpack_from(">I", data, 4)[0]
        out = []
        for k in range(n):
            _, _, offset, size, _ = struct.unpack_from(">5I", data, 8 + 20 * k)
            out.append(_macho(data[offset:offset + size]))
        return out
    if len(data) >= 4 and struct.unpack_from("<I", data)[0] == MH_MAGIC_64:
        return [_macho(data)]
    if data[:2] == b"MZ":
        return [_pe(data)]
    raise FmuMbError(f"not an ELF, Mach-O or PE file (it starts with {data[:4]!r})")


def fat_arches(data):
    """[(cputype, cpusubtype, offset, size, align)] of a universal Mach-O; [] for a thin one."""
    if len(data) < 8 or struct.unpack_from(">I", data)[0] != FAT_MAGIC:
        return []
    n = struct.unpack_from(">I", data, 4)[0]
    return [struct.unpack_from(">5I", data, 8 + 20 * k) for k in range(n)]


def universal(slices):
    """One universal Mach-O file of the thin 64-bit Mach-O libraries `slices` (bytes each, one
    per architecture): the fat header (big-endian: magic, number of slices), one fat_arch
    record per slice (CPU type and subtype from the slice's own header, offset, size,
    alignment 2^FAT_ALIGN), then the slices at aligned offsets."""
    if not slices:
        raise FmuMbError("a universal Mach-O needs at least one slice")
    records, body = [], b""
    offset = 1 << FAT_ALIGN            # the header fits in the first aligned block
    for s in slices:
        if len(s) < 32 or struct.unpack_from("<I", s)[0] != MH_MAGIC_64:
            raise FmuMbError("a slice of a universal Mach-O must be a thin 64-bit Mach-O")
        cputype, subtype = struct.unpack_from("<Ii", s, 4)
        records.append(struct.pack(">5I", cputype, subtype & 0xFFFFFFFF, offset, len(s),
                                   FAT_ALIGN))
        pad = -len(s) % (1 << FAT_ALIGN)
        body += s + b"\0" * pad
        offset += len(s) + pad
    if len({r[:4] for r in records}) != len(records):
        raise FmuMbError("the slices of a universal Mach-O must be of different architectures")
    head = struct.pack(">2I", FAT_MAGIC, len(slices)) + b"".join(records)
    return head + b"\0" * ((1 << FAT_ALIGN) - len(head)) + body


def _cstr(data, at):
    end = data.index(b"\0", at)
    return data[at:end].decode("utf-8", "replace")


def _elf(data):
    if data[4] != 2 or data[5] != 1:
        raise FmuMbError("only little-endian 64-bit ELF files are read")
    machine = struct.unpack_from("<H", data, 18)[0]
    shoff, = struct.unpack_from("<Q", data, 40)
    shentsize, shnum = struct.unpack_from("<HH", data, 58)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + k * shentsize)
                for k in range(shnum)]
    lib = Library("elf", ELF_ARCH.get(machine, f"machine {machine}"))
    for name, typ, _, _, off, size, link, _, _, entsize in sections:
        strtab = sections[link][4]
        if typ == 11:                                  # SHT_DYNSYM
            for at in range(off + entsize, off + size, entsize):     # entry 0 is null
                st_name, info, other, shndx = struct.unpack_from("<IBBH", data, at)
                sym = _cstr(data, strtab + st_name)
                if not sym or info >> 4 not in (1, 2):  # global or weak only
                    continue
                if shndx == 0:
                    lib.undefined.add(sym)
                elif other & 3 == 0:                    # default visibility
                    lib.exports.add(sym)
        elif typ == 6:                                 # SHT_DYNAMIC
            for at in range(off, off + size, 16):
                tag, value = struct.unpack_from("<qQ", data, at)
                if tag == 0:
                    break
                if tag == 1:                           # DT_NEEDED
                    lib.needed.append(_cstr(data, strtab + value))
                elif tag == 14:                        # DT_SONAME
                    lib.name = _cstr(data, strtab + value)
    return lib


def _macho(data):
    magic, cputype, _, _, ncmds, _, _, _ = struct.unpack_from("<8I", data)
    if magic != MH_MAGIC_64:
        raise FmuMbError("not a thin 64-bit Mach-O slice")
    lib = Library("macho", MACHO_ARCH.get(cputype, f"cputype {cputype:#x}"))
    at = 32
    for _ in range(ncmds):
        cmd, size = struct.unpack_from("<II", data, at)
        if cmd == 0x2:                                 # LC_SYMTAB
            symoff, nsyms, stroff, _ = struct.unpack_from("<4I", data, at + 8)
            for k in range(nsyms):
                strx, typ, _, _, _ = struct.unpack_from("<IBBHQ", data, symoff + 16 * k)
                if typ & 0xE0 or not typ & 0x01:       # a debugging entry, or not external
                    continue
                name = _cstr(data, stroff + strx)
                name = name[1:] if name.startswith("_") else name    # C names have a "_"
                if typ & 0x0E == 0x0:                  # N_UNDF
                    lib.undefined.add(name)
                elif typ & 0x0E == 0xE and not typ & 0x10:  # N_SECT, not private extern
                    lib.exports.add(name)
        elif cmd in (0xC, 0x18, 0x80000018, 0x1F):    # LC_LOAD_(WEAK_|REEXPORT_)DYLIB
            offset, = struct.unpack_from("<I", data, at + 8)
            lib.needed.append(_cstr(data, at + offset))
        elif cmd == 0xD:                               # LC_ID_DYLIB
            offset, = struct.unpack_from("<I", data, at + 8)
            lib.name = _cstr(data, at + offset)
        at += size
    return lib


def _pe(data):
    pe, = struct.unpack_from("<I", data, 0x3C)
    if data[pe:pe + 4] != b"PE\0\0":
        raise FmuMbError("an MZ file without a PE header")
    machine, nsec = struct.unpack_from("<HH", data, pe + 4)
    opt_size, = struct.unpack_from("<H", data, pe + 20)
    opt = pe + 24
    if struct.unpack_from("<H", data, opt)[0] != 0x20B:
        raise FmuMbError("only PE32+ (64-bit) files are read")
    exp_rva, _, imp_rva, _ = struct.unpack_from("<4I", data, opt + 112)
    sections = [struct.unpack_from("<IIII", data, opt + opt_size + 40 * k + 8)
                for k in range(nsec)]                  # VirtualSize, VA, raw size, raw offset

    def off(rva):
        for vsize, va, raw_size, raw in sections:
            if va <= rva < va + max(vsize, raw_size):
                return raw + rva - va
        raise FmuMbError(f"PE: address {rva:#x} is in no section")

    lib = Library("pe", PE_ARCH.get(machine, f"machine {machine:#x}"))
    if exp_rva:
        d = off(exp_rva)
        n_names, = struct.unpack_from("<I", data, d + 24)
        names, = struct.unpack_from("<I", data, d + 32)
        for k in range(n_names):
            lib.exports.add(_cstr(data, off(struct.unpack_from("<I", data, off(names) + 4 * k)[0])))
    if imp_rva:
        d = off(imp_rva)
        while True:
            lookup, _, _, name, first = struct.unpack_from("<5I", data, d)
            if not (lookup or name or first):
                break
            lib.needed.append(_cstr(data, off(name)))
            t = off(lookup or first)
            while True:
                entry, = struct.unpack_from("<Q", data, t)
                if entry == 0:
                    break
                if not entry >> 63:                    # by name: a hint, then the name
                    lib.undefined.add(_cstr(data, off(entry & 0x7FFFFFFF) + 2))
                t += 8
            d += 20
    return lib

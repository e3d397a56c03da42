"""tests/tools/ckpt_zero_errors.py IN OUT RANKS ERR_FLOATS - copies checkpoint IN to OUT
with the PowerSGD error feedback of RANKS ranks (ERR_FLOATS floats each: the last floats
before the CRC in format 6) set to zero and the CRC recomputed: the control of the
compression resume tests (mpi_compress.sh, mpi_compress_hpsgd.sh), which a resume from
it must not end where an exact one does."""
import sys
import zlib

src, dst, ranks, floats = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
b = bytearray(open(src, "rb").read())
n = ranks * floats * 4
if n <= 0 or n + 4 > len(b):
    sys.exit(f"{src}: {ranks} x {floats} error floats do not fit in {len(b)} bytes")
b[-4 - n:-4] = bytes(n)
b[-4:] = (zlib.crc32(bytes(b[:-4])) & 0xFFFFFFFF).to_bytes(4, "little")
open(dst, "wb").write(b)

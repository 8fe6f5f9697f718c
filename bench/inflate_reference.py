#!/usr/bin/python3
"""Time the reference DEFLATE decoders on the first 40 tiles of a tiled GeoTIFF band, for comparing
with `CROPKIT_BENCH_TILE=BAND go test ./imagery/geotiff -run X -bench InflateRealTiles` in one run.

    /usr/bin/python3 bench/inflate_reference.py /tmp/peers-data/tile/B08.tif

Prints the best of 5 runs of Python's zlib and of libdeflate (libdeflate.so.0 through ctypes, the
decoder GDAL uses when built with it). Needs Debian's python3-gdal and libdeflate0.
"""
import ctypes, sys, time, zlib
from osgeo import gdal

TILES = 40


def tiles(path):
    ds = gdal.Open(path)  # kept: the band does not keep its dataset alive
    band = ds.GetRasterBand(1)
    across = (band.XSize + band.GetBlockSize()[0] - 1) // band.GetBlockSize()[0]
    out = []
    with open(path, 'rb') as f:
        for i in range(TILES):
            x, y = i % across, i // across
            off = int(band.GetMetadataItem(f'BLOCK_OFFSET_{x}_{y}', 'TIFF'))
            cnt = int(band.GetMetadataItem(f'BLOCK_SIZE_{x}_{y}', 'TIFF'))
            f.seek(off)
            out.append(f.read(cnt))
    w, h = band.GetBlockSize()
    return out, w * h * gdal.GetDataTypeSize(band.DataType) // 8


def best(fn, runs=5):
    t = float('inf')
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        t = min(t, time.perf_counter() - start)
    return t * 1000


def main():
    comp, size = tiles(sys.argv[1])
    print(f'zlib        {TILES} tiles: {best(lambda: [zlib.decompress(c) for c in comp]):.1f} ms')
    lib = ctypes.CDLL('libdeflate.so.0')
    lib.libdeflate_alloc_decompressor.restype = ctypes.c_void_p
    d = ctypes.c_void_p(lib.libdeflate_alloc_decompressor())
    out = ctypes.create_string_buffer(size)

    def run():
        for c in comp:
            rc = lib.libdeflate_zlib_decompress(d, c, ctypes.c_size_t(len(c)), out, ctypes.c_size_t(size), None)
            if rc != 0:
                raise SystemExit(f'libdeflate: error {rc}')
    print(f'libdeflate  {TILES} tiles: {best(run):.1f} ms')


if __name__ == '__main__':
    main()

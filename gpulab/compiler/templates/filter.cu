// ---- Filter: stream compaction in one pass -------------------------------------
// A tile: load; each thread tests its items; the kept counts are scanned
// within the block and across tiles (look-back over counts); kept items are
// gathered in shared memory in order, then written out contiguously. The
// last tile writes how many items were kept in all.

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS, SCAN_MIN_BLOCKS)
gpulab_filter(Input0 in, index_t n, Output out, long long* kept_total, TileStatus<index_t> status,
              unsigned int epoch, Uniforms u) {
    auto add = [](index_t a, index_t b) { return a + b; };
    __shared__ alignas(16) value_t items[TILE_SLOTS];
    __shared__ index_t tile_kept, tile_prefix;

    const Tile tile = claim_tile(status, in, n, items);
    const int count = tile.count;

    // 1. Test this thread's items; keep them in registers.
    const int first = threadIdx.x * SCAN_ITEMS;
    value_t mine[SCAN_ITEMS];
    read_row(items, count, mine);
    bool keep[SCAN_ITEMS];
    index_t kept = 0;
    #pragma unroll
    for (int j = 0; j < SCAN_ITEMS; ++j) {
        keep[j] = first + j < count && predicate(mine[j], u);
        kept += keep[j];
    }

    // 2. Where this thread's kept items go within the tile.
    bool has;
    index_t position = block_exclusive_prefix(kept, has, add);
    if (first < count && first + SCAN_ITEMS >= count) tile_kept = position + kept;
    __syncthreads();  // every thread has read its items: the tile can be overwritten

    // 3. Gather kept items at the front of the tile, in order.
    #pragma unroll
    for (int j = 0; j < SCAN_ITEMS; ++j)
        if (keep[j]) items[slot(position++)] = mine[j];

    // 4. Where the tile's kept items go in the output.
    if (tile.id == 0) {
        if (threadIdx.x == 0) {
            tile_prefix = 0;
            publish(status, 0, epoch, STATUS_INCLUSIVE, tile_kept);
        }
    } else {
        if (threadIdx.x == 0) publish(status, tile.id, epoch, STATUS_AGGREGATE, tile_kept);
        if (warp_id() == 0) {
            const index_t before = look_back(status, tile.id, epoch, add);
            if (threadIdx.x == 0) {
                tile_prefix = before;
                publish(status, tile.id, epoch, STATUS_INCLUSIVE, before + tile_kept);
            }
        }
    }
    __syncthreads();

    for (int k = threadIdx.x; k < tile_kept; k += BLOCK_THREADS) store(out, tile_prefix + k, items[slot(k)]);
    if (tile.id == tile.tiles - 1 && threadIdx.x == 0) *kept_total = tile_prefix + tile_kept;
}

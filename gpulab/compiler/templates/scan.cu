// ---- Scan: one pass with decoupled look-back ----------------------------------
// A tile: load; each thread folds its items; prefixes of the threads within
// the block; the tile's prefix from its predecessors (look-back); each thread
// rescans its items from its full prefix; store. Every fold is in order.

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS, SCAN_MIN_BLOCKS)
gpulab_scan(Input0 in, index_t n, Output out, TileStatus<value_t> status, unsigned int epoch,
            value_t initial, bool has_initial, Uniforms u) {
    auto combine = [&](value_t a, value_t b) { return op(a, b, u); };
    __shared__ alignas(16) value_t items[TILE_SLOTS];
    __shared__ value_t tile_aggregate, tile_prefix;
    __shared__ bool tile_has_prefix;

    const Tile tile = claim_tile(status, in, n, items);
    const int count = tile.count;

    // 1. This thread's items and their fold.
    const int first = threadIdx.x * SCAN_ITEMS;
    const int mine = count - first < 0 ? 0 : (count - first < SCAN_ITEMS ? count - first : SCAN_ITEMS);
    value_t row[SCAN_ITEMS];
    read_row(items, count, row);
    value_t total = row[0];
    #pragma unroll
    for (int j = 1; j < SCAN_ITEMS; ++j)
        if (j < mine) total = combine(total, row[j]);

    // 2. The prefix of this thread within the tile.
    bool has;
    value_t prefix = block_exclusive_prefix(total, has, combine);

    // 3. The tile's prefix: the initial value for tile 0, else the look-back.
    if (mine > 0 && first + mine == count) {  // the last thread holding items
        tile_aggregate = has ? combine(prefix, total) : total;
        if (tile.id == 0)
            publish(status, 0, epoch, STATUS_INCLUSIVE,
                    has_initial ? combine(initial, tile_aggregate) : tile_aggregate);
        else
            publish(status, tile.id, epoch, STATUS_AGGREGATE, tile_aggregate);
    }
    __syncthreads();
    if (tile.id == 0) {
        if (threadIdx.x == 0) {
            tile_prefix = initial;
            tile_has_prefix = has_initial;
        }
    } else if (warp_id() == 0) {
        const value_t before = look_back(status, tile.id, epoch, combine);
        if (threadIdx.x == 0) {
            tile_prefix = before;
            tile_has_prefix = true;
            publish(status, tile.id, epoch, STATUS_INCLUSIVE, combine(before, tile_aggregate));
        }
    }
    __syncthreads();

    // 4. Rescan this thread's items from its full prefix.
    if (tile_has_prefix) {
        prefix = has ? combine(tile_prefix, prefix) : tile_prefix;
        has = true;
    }
    #pragma unroll
    for (int j = 0; j < SCAN_ITEMS; ++j) {
        const value_t running = has ? combine(prefix, row[j]) : row[j];
        row[j] = EXCLUSIVE ? prefix : running;
        prefix = running;
        has = true;
    }
    write_row(items, row);  // rows past the last item are written but never stored
    __syncthreads();
    store_tile(out, tile.base, count, items);
}

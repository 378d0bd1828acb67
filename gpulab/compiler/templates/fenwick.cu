// ---- Look-back over aligned groups of tiles, for the portable tree (order.cu) --
// Tile b publishes G(b), the pairwise tree of the aligned group of tiles that
// ends at b (a Fenwick tree's node): the lowest set digit of b + 1, 2^k tiles,
// k the count of b's trailing ones. Its halves are G(b - 2^(k-1)) and the
// group of 2^(k-1) tiles ending at b, so with A(b) the tile's own tree
//
//     G(b) = G(b - 2^(k-1)) op (G(b - 2^(k-2)) op (... op (G(b - 1) op A(b))))
//
// The tiles before b are the groups of b's set digits, digit i's ending at
// tile (b >> i << i) - 1, so
//
//     F(b tiles)     = those groups' G, largest first, folded left to right
//     F(b + 1 tiles) = the groups of b's digits above k, then G(b)
//
// (b + 1 has b's digits above k, and digit k): folds of published groups in
// the sequence of the positions' digits (order.cu), never a running prefix,
// whatever the tile size. G(b) waits only for the tiles of its own group (the
// digits below k), and is published before the older groups of b's higher
// digits are waited for: a running prefix would chain every tile to the one
// before. It reads one value per set digit of b, where the window above
// reads LOOKBACK_TILES (lookback.cu). The values live in status.aggregate
// (the inclusive words are unused), stamped with the launch's epoch as the
// window's are (lookback.cu: publish, try_read).
#define FENWICK_SLOTS 63  // one per digit of a tile number, read by a thread each
static_assert(BLOCK_THREADS >= FENWICK_SLOTS, "a thread per digit of a tile number");

template <typename T>
struct FenwickWindow {
    T group[FENWICK_SLOTS];  // slot i: the G of b's digit i
    T before, after;         // F(b tiles), F(b + 1 tiles)
    bool has_before;
};

// Publish G(tile) from `aggregate` and find F(tile) and F(tile + 1) in `window`
// (before, after, has_before). Called by every thread (it has barriers).
template <typename T, typename Combine>
__device__ __forceinline__ void fenwick_look_back(const TileStatus<T>& status, long long tile, unsigned int epoch,
                                                  const T& aggregate, FenwickWindow<T>& window, Combine combine) {
    const int own = __ffsll(~tile) - 1;  // k: the trailing ones of tile, its group's digit
    const int i = threadIdx.x;
    const bool mine = i < FENWICK_SLOTS && (tile >> i & 1);
    const long long group_end = mine ? (tile >> i << i) - 1 : 0;
    bool ready = false;
    if (mine) {
        T value;
        if (i < own) {
            while (!try_read(status.aggregate, group_end, epoch, value)) {
            }
            ready = true;
        } else {
            ready = try_read(status.aggregate, group_end, epoch, value);  // old groups: mostly there at once
        }
        if (ready) window.group[i] = value;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        T g = aggregate;
        for (int j = 0; j < own; ++j) g = combine(window.group[j], g);
        publish(status.aggregate, tile, epoch, g);
        window.after = g;
    }
    if (mine && !ready) {
        T value;
        while (!try_read(status.aggregate, group_end, epoch, value)) {
        }
        window.group[i] = value;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        T before = window.after, after = window.after;
        bool has = false, has_after = false;
        for (int j = tile == 0 ? -1 : 63 - __clzll(tile); j >= 0; --j) {
            if (tile >> j & 1) {
                before = has ? combine(before, window.group[j]) : window.group[j];
                has = true;
                if (j > own) after = before;  // F over the digits above own: where F(tile + 1) starts
                has_after = has_after || j > own;
            }
        }
        window.after = has_after ? combine(after, window.after) : window.after;
        window.before = before;
        window.has_before = has;
    }
    __syncthreads();
}

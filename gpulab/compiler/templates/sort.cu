// ---- Sort: a stable LSD radix sort, one launch per 8-bit digit (Onesweep) ------
// Items are ordered by their keys, key_of(x) (the item itself when sort has no
// key function), turned into unsigned bits that compare as NumPy orders the
// keys (ordered_bits). A pass sorts by one digit of those bits, the least
// significant first; each pass is stable, so after the last one items are in
// key order and equal keys keep their input order.
//
// One pass, one launch (Adinets & Merrill, "Onesweep", 2022): where a digit's
// items go is where the items of smaller digits end (counted for every pass at
// once, before the first, by gpulab_sort_histogram) plus the items of the same
// digit in earlier tiles. That second count is a scan over tiles, one per digit,
// and it takes the scan's decoupled look-back (lookback.cu): each tile publishes
// its 256 counts at once, then walks back over its predecessors' words. The
// words are the scan's, 64 bits holding a value beside the launch's epoch; two
// bits of the epoch's word say whether a tile's word holds its own count (an
// aggregate) or the count of every tile up to it (an inclusive prefix), so one
// word per tile and digit serves both. Counts are integers: the walk may stop
// at any inclusive prefix (as CUB's does), and the result never depends on
// timing. A launch sorts at most PORTION_TILES tiles, so that its counts fit 32
// bits; its last tile says where the next launch's items of each digit begin.

#define RADIX (1 << RADIX_BITS)
#define SORT_TILE (BLOCK_THREADS * SCAN_ITEMS)
#define WARP_ITEMS (WARP_THREADS * SCAN_ITEMS)
static_assert(BLOCK_THREADS == RADIX, "each thread of a tile owns a digit");
static_assert(SORT_TILE <= 0xffff, "an item's place in the tile fits 16 bits");

// The key's kind, read off the type (no <type_traits> under NVRTC).
constexpr bool KEY_IS_BOOL = (key_t)2 == (key_t)1;
constexpr bool KEY_IS_FLOAT = (key_t)1.5 != (key_t)1;
constexpr bool KEY_IS_SIGNED = !KEY_IS_FLOAT && (key_t)-1 < (key_t)0;
constexpr int KEY_BITS = 8 * sizeof(key_t);
constexpr int PASSES = (KEY_BITS + RADIX_BITS - 1) / RADIX_BITS;

template <bool WIDE> struct RadixWord { typedef unsigned int type; };
template <> struct RadixWord<true> { typedef unsigned long long type; };
typedef RadixWord<(sizeof(key_t) > 4)>::type radix_t;  // the ordered bits of a key

// A key's bits, as an unsigned number that orders keys as NumPy does:
// integers with the sign bit flipped; floats with negatives' bits reversed and
// positives' sign bit set; -0.0 as 0.0 (equal keys keep their order); every NaN
// the largest (last). Descending: the bits reversed, NaN still last.
__device__ __forceinline__ radix_t ordered_bits(key_t key, bool descending) {
    constexpr radix_t TOP = (radix_t)1 << (KEY_BITS - 1);
    constexpr radix_t ALL = ~(radix_t)0 >> (8 * sizeof(radix_t) - KEY_BITS);
    radix_t bits = 0;
    memcpy(&bits, &key, sizeof(key_t));
    bool nan = false;
    if constexpr (KEY_IS_BOOL) {
        bits = key ? 1 : 0;
    } else if constexpr (KEY_IS_FLOAT) {
        nan = key != key;
        bits = key == (key_t)0 ? 0 : bits;
        bits = (bits & TOP) ? (~bits & ALL) : (bits | TOP);
        bits = nan ? ALL : bits;
    } else if constexpr (KEY_IS_SIGNED) {
        bits ^= TOP;
    }
    return descending && !nan ? (~bits & ALL) : bits;
}

__device__ __forceinline__ unsigned int digit_of(radix_t bits, int shift) {
    return (unsigned int)(bits >> shift) & (RADIX - 1);
}

// ---- Before the first pass: every pass's digit counts, in one read ------------
// Counts per block in shared memory, then added to `counts`; the last block to
// finish turns each pass's counts into where its digits start (`bins`, for the
// first launch of each pass) and leaves `finished` at 0 for the next call.
extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)
gpulab_sort_histogram(Input0 in, index_t n, unsigned long long* counts, index_t* bins, long long portions,
                      unsigned int* finished, bool descending, Uniforms u) {
    __shared__ unsigned int block_counts[PASSES][RADIX];
    __shared__ bool last;
    #pragma unroll
    for (int p = 0; p < PASSES; ++p) block_counts[p][threadIdx.x] = 0;
    __syncthreads();
    #pragma unroll 1  // a loop of unknown length: not unrolled (ptxas leaves an unrolled one by a CALL on sm_80-89)
    for (index_t i = (index_t)blockIdx.x * BLOCK_THREADS + threadIdx.x; i < n; i += (index_t)gridDim.x * BLOCK_THREADS) {
        const radix_t bits = ordered_bits(key_of(load(in, i), u), descending);
        #pragma unroll
        for (int p = 0; p < PASSES; ++p) atomicAdd(&block_counts[p][digit_of(bits, p * RADIX_BITS)], 1u);
    }
    __syncthreads();
    #pragma unroll
    for (int p = 0; p < PASSES; ++p) {
        const unsigned int mine = block_counts[p][threadIdx.x];
        if (mine != 0) atomicAdd(counts + p * RADIX + threadIdx.x, (unsigned long long)mine);
    }
    __threadfence();  // this block's counts are seen before it says it is done
    __syncthreads();
    if (threadIdx.x == 0) last = atomicInc(finished, gridDim.x - 1) == gridDim.x - 1;
    __syncthreads();
    if (!last) return;
    __threadfence();  // and the other blocks' counts are seen by this one
    #pragma unroll
    for (int p = 0; p < PASSES; ++p) {
        const index_t count = (index_t)load_relaxed(counts + p * RADIX + threadIdx.x);
        bool has;
        const index_t start = block_exclusive_prefix(count, has, [](index_t a, index_t b) { return a + b; });
        bins[p * portions * RADIX + threadIdx.x] = has ? start : 0;
        __syncthreads();  // the prefix's shared totals are read before the next pass writes them
    }
}

// ---- One pass -----------------------------------------------------------------
struct SortPass {
    index_t first;      // the launch's first item (a portion of the input starts there)
    index_t count;      // the launch's items
    int shift;          // the digit: bits [shift, shift + RADIX_BITS) of the ordered key
    bool descending;
};

// The values moved with the items (PAYLOAD_BYTES each): an array, or, where
// `data` is null, start + the items' indices (argsort's values: an iota,
// never stored).
struct Values {
    const payload_t* data;
    Layout layout;
    long long start;
};

__device__ __forceinline__ payload_t value_at(const Values& values, index_t i) {
    if constexpr (sizeof(payload_t) == 4 || sizeof(payload_t) == 8) {
        if (values.data == nullptr) return (payload_t)(values.start + i);
    }
    return values.data[offset_of(values.layout, i)];
}

// A status word of the look-back: count << 32 | kind << 30 | epoch.
#define AGGREGATE 1ull
#define INCLUSIVE 2ull
__device__ __forceinline__ unsigned long long status_word(unsigned long long count, unsigned long long kind,
                                                          unsigned int epoch) {
    return count << 32 | kind << 30 | epoch;
}

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS, SORT_MIN_BLOCKS)
gpulab_sort_pass(Input0 in, Values values, value_t* out, payload_t* values_out, SortPass pass,
                 const index_t* bins_in, index_t* bins_out, unsigned long long* status, unsigned int epoch,
                 Uniforms u) {
    // The tile passes through shared memory twice: its items, then its values, in sorted order.
    constexpr int EXCHANGE = sizeof(value_t) > sizeof(payload_t) ? sizeof(value_t) : sizeof(payload_t);
    __shared__ alignas(16) unsigned char exchange[SORT_TILE * EXCHANGE];
    __shared__ unsigned int warp_counts[WARPS_PER_BLOCK][RADIX + 1];  // the last column: items past the end
    __shared__ index_t moved_by[RADIX];        // position p of the tile, of digit d, goes to moved_by[d] + p
    __shared__ unsigned char digits[SORT_TILE];  // the digit of each position of the tile
    const int warp = warp_id(), lane = lane_id();
    const index_t base = pass.first + (index_t)blockIdx.x * SORT_TILE;
    const index_t left = pass.count - (index_t)blockIdx.x * SORT_TILE;
    const int count = left < SORT_TILE ? (int)left : SORT_TILE;
    const bool direct = is_contiguous(in.layout);

    // 1. Warp w takes the tile's items w * WARP_ITEMS on, a lane's items 32
    //    apart, so that items ranked in lane order, one row j at a time, are
    //    ranked in input order. Past the end, the digit is RADIX: no digit.
    //    An item's digit and its rank share a register: digit << 16 | rank.
    value_t items[SCAN_ITEMS];
    unsigned int place[SCAN_ITEMS];
    #pragma unroll
    for (int j = 0; j < SCAN_ITEMS; ++j) {
        const int k = warp * WARP_ITEMS + j * WARP_THREADS + lane;
        const index_t i = base + (k < count ? k : 0);
        items[j] = direct ? in.data[i] : load(in, i);
        place[j] = (k < count ? digit_of(ordered_bits(key_of(items[j], u), pass.descending), pass.shift) : RADIX) << 16;
    }
    for (int d = lane; d <= RADIX; d += WARP_THREADS) warp_counts[warp][d] = 0;
    __syncwarp();

    // 2. Each item's rank among its warp's items of its digit: the lanes of a
    //    row that share a digit (MATCH.ANY) are counted together, in lane order.
    const unsigned int lanes_before = (1u << lane) - 1;
    #pragma unroll
    for (int j = 0; j < SCAN_ITEMS; ++j) {
        const unsigned int digit = place[j] >> 16;
        const unsigned int peers = __match_any_sync(0xffffffffu, digit);
        const unsigned int seen = warp_counts[warp][digit];
        __syncwarp();
        warp_counts[warp][digit] = seen + __popc(peers);  // every peer writes the same count
        place[j] |= seen + __popc(peers & lanes_before);
        __syncwarp();
    }
    __syncthreads();

    // 3. Thread d owns digit d: the tile's count of it, each warp's first place
    //    among its items, and where its items start in the tile.
    const int d = threadIdx.x;
    unsigned int total = 0;
    #pragma unroll
    for (int w = 0; w < WARPS_PER_BLOCK; ++w) {
        const unsigned int c = warp_counts[w][d];
        warp_counts[w][d] = total;
        total += c;
    }
    unsigned long long* mine = status + (long long)blockIdx.x * RADIX + d;
    store_relaxed(mine, status_word(total, blockIdx.x == 0 ? INCLUSIVE : AGGREGATE, epoch));  // published at once
    bool has;
    const unsigned int start = block_exclusive_prefix(total, has, [](unsigned int a, unsigned int b) { return a + b; });
    const unsigned int tile_start = has ? start : 0;

    // 4. The look-back: this digit's items in earlier tiles of the launch, from
    //    their aggregates back to the nearest inclusive prefix.
    unsigned long long before = 0;
    for (long long t = (long long)blockIdx.x - 1; t >= 0; --t) {
        unsigned long long word;
        do {
            word = load_relaxed(status + t * RADIX + d);
        } while ((unsigned int)(word & 0x3fffffffu) != epoch);
        before += word >> 32;
        if ((word >> 30 & 3u) == INCLUSIVE) break;
    }
    if (blockIdx.x > 0) store_relaxed(mine, status_word(before + total, INCLUSIVE, epoch));
    const index_t at = bins_in[d] + (index_t)before;  // where this tile's first item of digit d goes
    moved_by[d] = at - tile_start;
    if (bins_out != nullptr && blockIdx.x == gridDim.x - 1) bins_out[d] = at + total;  // the next launch's start
    #pragma unroll
    for (int w = 0; w < WARPS_PER_BLOCK; ++w) warp_counts[w][d] += tile_start;
    __syncthreads();

    // 5. The items in sorted order in shared memory, then out: position p of
    //    digit d goes to moved_by[d] + p, so a run of one digit is written to
    //    consecutive addresses.
    value_t* tile_items = reinterpret_cast<value_t*>(exchange);
    #pragma unroll
    for (int j = 0; j < SCAN_ITEMS; ++j) {
        const unsigned int digit = place[j] >> 16;
        place[j] = digit << 16 | ((place[j] & 0xffffu) + warp_counts[warp][digit]);  // the item's place in the tile
        if (digit < RADIX) {
            tile_items[place[j] & 0xffffu] = items[j];
            digits[place[j] & 0xffffu] = (unsigned char)digit;
        }
    }
    __syncthreads();
    #pragma unroll
    for (int r = 0; r < SCAN_ITEMS; ++r) {
        const int p = r * BLOCK_THREADS + threadIdx.x;
        if (p < count) out[moved_by[digits[p]] + p] = tile_items[p];
    }

    // 6. The values the same way: loaded as the items were, placed where they went.
    if constexpr (PAYLOAD_BYTES > 0) {
        payload_t moved[SCAN_ITEMS];
        #pragma unroll
        for (int j = 0; j < SCAN_ITEMS; ++j) {
            const int k = warp * WARP_ITEMS + j * WARP_THREADS + lane;
            moved[j] = value_at(values, base + (k < count ? k : 0));
        }
        __syncthreads();  // every item is out of the exchange
        payload_t* tile_values = reinterpret_cast<payload_t*>(exchange);
        #pragma unroll
        for (int j = 0; j < SCAN_ITEMS; ++j)
            if ((place[j] >> 16) < RADIX) tile_values[place[j] & 0xffffu] = moved[j];
        __syncthreads();
        #pragma unroll
        for (int r = 0; r < SCAN_ITEMS; ++r) {
            const int p = r * BLOCK_THREADS + threadIdx.x;
            if (p < count) values_out[moved_by[digits[p]] + p] = tile_values[p];
        }
    }
}

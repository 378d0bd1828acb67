// ---- Decoupled look-back (Merrill & Garland, 2016) ----------------------------
// Tiles take increasing ids in the order they start. Each tile publishes its
// aggregate, then finds its prefix by reading predecessors' status from the
// nearest one backwards, 32 at a time: a predecessor that already knows its
// inclusive prefix ends the search. One pass over the input, no second launch.
//
// A status word is (epoch << 2 | state): the host passes a new epoch to each
// launch, so the status array never needs clearing between launches. Values
// of at most PACKED_STATUS_BYTES travel in the status word itself: a 64-bit word
// (value << 32 | epoch << 2 | state) written and read whole, so a reader
// needs one load and no fence. Wider values have arrays of their own.

#define STATUS_AGGREGATE 1u
#define STATUS_INCLUSIVE 2u

template <typename T>
struct TileStatus {
    unsigned int* flags;
    T* aggregate;
    T* inclusive;
    unsigned int* next_tile;  // tile-id counter; the last tile resets it to 0
};

// Loads and stores that bypass L1, so other blocks' writes are seen: in
// 32-bit words, or byte by byte for values of other sizes.
template <typename T>
__device__ __forceinline__ void store_cg(T* p, T value) {
    if constexpr (sizeof(T) % 4 == 0) {
        unsigned int words[sizeof(T) / 4];
        memcpy(words, &value, sizeof(T));
        #pragma unroll
        for (int w = 0; w < (int)(sizeof(T) / 4); ++w) __stcg(reinterpret_cast<unsigned int*>(p) + w, words[w]);
    } else {
        unsigned char bytes[sizeof(T)];
        memcpy(bytes, &value, sizeof(T));
        #pragma unroll
        for (int b = 0; b < (int)sizeof(T); ++b) reinterpret_cast<volatile unsigned char*>(p)[b] = bytes[b];
    }
}

template <typename T>
__device__ __forceinline__ T load_cg(const T* p) {
    T value;
    if constexpr (sizeof(T) % 4 == 0) {
        unsigned int words[sizeof(T) / 4];
        #pragma unroll
        for (int w = 0; w < (int)(sizeof(T) / 4); ++w) words[w] = __ldcg(reinterpret_cast<const unsigned int*>(p) + w);
        memcpy(&value, words, sizeof(T));
    } else {
        unsigned char bytes[sizeof(T)];
        #pragma unroll
        for (int b = 0; b < (int)sizeof(T); ++b) bytes[b] = reinterpret_cast<const volatile unsigned char*>(p)[b];
        memcpy(&value, bytes, sizeof(T));
    }
    return value;
}

template <typename T>
__device__ constexpr bool packed_status() { return sizeof(T) <= PACKED_STATUS_BYTES; }

// 64-bit loads and stores at GPU scope (coherent across blocks, no ordering).
__device__ __forceinline__ unsigned long long load_relaxed(const unsigned long long* p) {
    unsigned long long value;
    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(value) : "l"(p) : "memory");
    return value;
}

__device__ __forceinline__ void store_relaxed(unsigned long long* p, unsigned long long value) {
    asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(value) : "memory");
}

template <typename T>
__device__ __forceinline__ void publish(const TileStatus<T>& status, long long tile, unsigned int epoch,
                                        unsigned int state, T value) {
    if constexpr (packed_status<T>()) {
        unsigned int bits = 0;
        memcpy(&bits, &value, sizeof(T));
        store_relaxed(reinterpret_cast<unsigned long long*>(status.flags) + tile,
                      (unsigned long long)bits << 32 | (epoch << 2 | state));
    } else {
        store_cg(state == STATUS_INCLUSIVE ? status.inclusive + tile : status.aggregate + tile, value);
        __threadfence();
        atomicExch(status.flags + tile, epoch << 2 | state);
    }
}

// Wait until tile t has published in this launch; return its state, and its value in `value`.
template <typename T>
__device__ __forceinline__ unsigned int wait_for_status(const TileStatus<T>& status, long long t, unsigned int epoch,
                                                        T& value) {
    if constexpr (packed_status<T>()) {
        const unsigned long long* at = reinterpret_cast<const unsigned long long*>(status.flags) + t;
        unsigned long long word;
        do {
            word = load_relaxed(at);
        } while (((unsigned int)word >> 2) != epoch);
        const unsigned int bits = (unsigned int)(word >> 32);
        memcpy(&value, &bits, sizeof(T));
        return (unsigned int)word & 3u;
    } else {
        unsigned int flag;
        do {
            flag = atomicAdd(status.flags + t, 0u);
        } while ((flag >> 2) != epoch);
        __threadfence();
        const unsigned int state = flag & 3u;
        value = load_cg(state == STATUS_INCLUSIVE ? status.inclusive + t : status.aggregate + t);
        return state;
    }
}

// Called by one whole warp for tile > 0; every lane returns the fold of all
// tiles before `tile`, in order.
template <typename T, typename Combine>
__device__ __forceinline__ T look_back(const TileStatus<T>& status, long long tile, unsigned int epoch,
                                       Combine combine) {
    const int lane = lane_id();
    T prefix = T();
    bool has_prefix = false;
    for (long long window_end = tile; window_end > 0; window_end -= WARP_THREADS) {
        const long long t = window_end - WARP_THREADS + lane;  // lane 31: the nearest predecessor
        unsigned int state = 0;
        T value = T();
        if (t >= 0) state = wait_for_status(status, t, epoch, value);
        const unsigned int inclusive_lanes = __ballot_sync(0xffffffffu, state == STATUS_INCLUSIVE);
        const int first = inclusive_lanes ? 31 - __clz(inclusive_lanes) : 0;
        bool has = t >= 0 && lane >= first;
        T window = warp_fold_partial(value, has, combine);
        window = shuffle_index(window, 0);
        if (__shfl_sync(0xffffffffu, has, 0)) {
            prefix = has_prefix ? combine(window, prefix) : window;
            has_prefix = true;
        }
        if (inclusive_lanes) break;
    }
    return prefix;
}

// Thread 0 takes the next tile id and shares it with the block.
template <typename T>
__device__ __forceinline__ long long next_tile_id(const TileStatus<T>& status, long long tiles) {
    __shared__ long long id;
    if (threadIdx.x == 0) {
        id = atomicAdd(status.next_tile, 1u);
        if (id == tiles - 1) *status.next_tile = 0;  // every block has its id: reset for the next launch
    }
    __syncthreads();
    return id;
}

// The tile a block works on: its id, the number of tiles, its first item and its item count.
struct Tile {
    long long id;
    long long tiles;
    index_t base;
    int count;
};

// Take the next tile and load its items into shared memory (`items`).
template <typename S, typename In, typename T>
__device__ __forceinline__ Tile claim_tile(const TileStatus<S>& status, const In& in, index_t n, T* items) {
    Tile tile;
    tile.tiles = (n + SCAN_TILE - 1) / SCAN_TILE;
    tile.id = next_tile_id(status, tile.tiles);
    tile.base = (index_t)tile.id * SCAN_TILE;
    tile.count = n - tile.base < SCAN_TILE ? (int)(n - tile.base) : SCAN_TILE;
    load_tile(in, tile.base, tile.count, items);
    __syncthreads();
    return tile;
}

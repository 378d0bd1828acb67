// ---- Histogram: exact counts per bin, privatised in shared memory --------------
// Each block walks tiles of TILE items, a grid's stride apart (the host launches
// as many blocks as fit on the GPU at once), so each block adds its counts to
// the output once, not once per tile. An item's bin comes from key_of(x), the
// operator: either the bin itself (an integer; outside [0, bins) the item is
// dropped, -1 by convention), or a value binned evenly over a range with
// NumPy's rules. The host says which (struct Bins, primitives/histogram.py).
//
// Privatisation: a block counts in shared memory with atomics (ATOMS in the
// SASS) and adds its counts to the output's at the end (ATOMG.ADD.64), where an
// atomic on global memory per item would queue every item at one L2 slice per
// bin. The shared counts are kept in several copies, interleaved: bin b of copy
// c is word b * copies + c, and lane l counts in copy l % copies. With 32
// copies (up to 256 bins) the 32 lanes of one atomic always touch 32 different
// banks, whatever their bins: no bank conflict, even when every item falls in
// one bin. More bins leave room for fewer copies; past SHARED_BIN_WORDS bins
// every item is counted in global memory. A dropped item is counted too, in a
// bin past the last that is never added up: the count takes no branch. Counts
// are integers: the order the atomics land in never changes them.

// How a key becomes a bin (written by the host, primitives/histogram.py).
struct Bins {
    long long count;            // how many bins
    int copies;                 // the shared counts are in this many copies (a power of two, at most 32)
    bool privatised;            // counted in shared memory (else in the output)
    bool integral;              // integer keys are binned by integer arithmetic (below); others by edges
    bool closed;                // integral: some key can be the range's high end (the last bin is closed)
    long long low;              // integral: bin (k - low) >> shift, where 0 <= k - low <= last
    unsigned long long last;
    int shift;
    double first;               // edges: kept where first <= k <= final (NaN is neither)
    double final;
    double scale;               // an estimate of the bin, (k - first) * scale, then corrected
    const double* edges;        // count + 1 edges, as NumPy's np.linspace gives them
};

// An integer key's bin by a subtraction and a shift (count: dropped). An index
// has low 0 and shift 0; even bins over an integer range whose bins are a power
// of two wide (0..256 in 256 bins) take this path too. Where no key can be the
// range's high end (an index, or uint8 keys over 0..256) a key is kept exactly
// when its bin is below count, and one min() bins it; otherwise (CLOSED) the
// high end goes to the last bin. Keys of up to 4 bytes work in 32 bits: the
// host takes this path only where the subtraction cannot wrap a key from
// outside the range into it.
template <bool CLOSED, typename K>
__device__ __forceinline__ long long integral_bin(K key, const Bins& bins) {
    if constexpr (sizeof(K) <= 4) {
        const unsigned int k = (unsigned int)key - (unsigned int)bins.low;
        if constexpr (!CLOSED) return min(k >> bins.shift, (unsigned int)bins.count);
        const unsigned int bin = min(k >> bins.shift, (unsigned int)(bins.count - 1));
        return k <= (unsigned int)bins.last ? bin : (unsigned int)bins.count;
    } else {
        const unsigned long long k = (unsigned long long)key - (unsigned long long)bins.low;
        if constexpr (!CLOSED) return (long long)min(k >> bins.shift, (unsigned long long)bins.count);
        const unsigned long long bin = min(k >> bins.shift, (unsigned long long)(bins.count - 1));
        return (long long)(k <= bins.last ? bin : (unsigned long long)bins.count);
    }
}

// A key's bin with NumPy's rules (numpy.histogram with bins and range; count:
// dropped): the edges are np.linspace(first, final, count + 1); a key belongs
// to the bin whose edges enclose it, the last bin closed on the right; NaN and
// keys outside [first, final] are dropped. As NumPy does, the bin is estimated
// by a multiply, then moved by one where the edges disagree, so that the edges
// alone decide. Compares in double are NumPy's float32 compares too: every
// float32 key and edge converts to double exactly.
__device__ __forceinline__ long long even_bin(double key, const Bins& bins) {
    const bool kept = key >= bins.first && key <= bins.final;
    const long long estimate = max(0ll, min((long long)((key - bins.first) * bins.scale), bins.count - 1));
    const double lower = __ldg(bins.edges + estimate), upper = __ldg(bins.edges + estimate + 1);
    const long long bin = estimate + (key >= upper && estimate != bins.count - 1) - (key < lower);
    return kept ? bin : bins.count;
}

// Whether the operator's result is an integer (or bool): only those take integral_bin.
constexpr bool INTEGER_KEY = (key_t)1.5 == (key_t)1;

// A key's bin as the host asked (the general path).
__device__ __forceinline__ long long bin_of(key_t key, const Bins& bins) {
    if constexpr (INTEGER_KEY) {
        if (bins.integral) return integral_bin<true>(key, bins);
    }
    return even_bin((double)key, bins);
}

// Add one to the count at `mine` + `offset` bytes, in shared memory (the
// address in 32 bits: the multiply that makes `offset` adds it in the same
// instruction).
__device__ __forceinline__ void count_at(unsigned int mine, unsigned int offset) {
    asm volatile("red.shared.add.u32 [%0], 1;" ::"r"(mine + offset) : "memory");
}

// The fast path: chunks of whole vectors counted in shared memory, each
// item's bin by the one rule its keys need, the next chunk's loads in flight
// while this one is counted. A chunk is ROUND vectors a thread, at most 4
// items (or one vector of 8 or 16 small ones): on sm_80-89 ptxas leaves a loop
// of more than ~300 instructions by a local CALL, and 8 items of a key
// function with a 64-bit division reach that. No loop here is unrolled by
// ptxas, for the same reason.
constexpr int ROUND = VEC < 4 ? 4 / VEC : 1;  // vectors per thread and chunk
constexpr int CHUNK = ROUND * BLOCK_THREADS * VEC;

template <bool CLOSED>
__device__ __forceinline__ void count_chunks(const Input0& in, index_t chunks, unsigned int mine,
                                             const Bins& bins, const Uniforms& u) {
    const unsigned int stride = (unsigned int)bins.copies * 4;  // bytes from a bin's counts to the next's
    auto load_chunk = [&](index_t chunk, Vector<value_t, VEC> (&v)[ROUND]) {
        #pragma unroll
        for (int k = 0; k < ROUND; ++k)
            v[k] = load_vector(in, chunk * CHUNK + (index_t)(k * BLOCK_THREADS + threadIdx.x) * VEC);
    };
    index_t chunk = blockIdx.x;
    if (chunk >= chunks) return;
    Vector<value_t, VEC> next[ROUND];
    load_chunk(chunk, next);
    #pragma unroll 1
    for (; chunk < chunks; chunk += gridDim.x) {
        Vector<value_t, VEC> v[ROUND];
        #pragma unroll
        for (int k = 0; k < ROUND; ++k) v[k] = next[k];
        if (chunk + gridDim.x < chunks) load_chunk(chunk + gridDim.x, next);
        #pragma unroll
        for (int k = 0; k < ROUND; ++k) {
            #pragma unroll
            for (int j = 0; j < VEC; ++j) {
                const key_t key = key_of(v[k].item[j], u);
                long long bin;
                if constexpr (INTEGER_KEY) {
                    bin = integral_bin<CLOSED>(key, bins);
                } else {
                    bin = even_bin((double)key, bins);
                }
                count_at(mine, (unsigned int)bin * stride);
            }
        }
    }
}

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS, HISTOGRAM_MIN_BLOCKS)
gpulab_histogram(Input0 in, index_t n, unsigned long long* counts, Bins bins, Uniforms u) {
    __shared__ unsigned int shared[SHARED_BIN_WORDS + WARP_THREADS];  // and the dropped items' bin
    const int copies = bins.copies;
    const unsigned int mine = (unsigned int)__cvta_generic_to_shared(shared + (lane_id() & (copies - 1)));
    if (bins.privatised) {
        const int words = (int)bins.count * copies;
        #pragma unroll 1
        for (int w = threadIdx.x; w < words; w += BLOCK_THREADS) shared[w] = 0;
        __syncthreads();
    }
    const bool fast = bins.privatised && (bins.integral || !INTEGER_KEY) && can_vectorize(in);
    const index_t chunks = fast ? n / CHUNK : 0;
    if (INTEGER_KEY && bins.closed) {
        count_chunks<true>(in, chunks, mine, bins, u);
    } else {
        count_chunks<false>(in, chunks, mine, bins, u);
    }
    // Everything else, item by item: the last chunk, strided inputs, integer
    // keys binned by their edges, and counts in global memory (many bins).
    #pragma unroll 1
    for (index_t i = chunks * CHUNK + (index_t)blockIdx.x * BLOCK_THREADS + threadIdx.x; i < n;
         i += (index_t)gridDim.x * BLOCK_THREADS) {
        const long long bin = bin_of(key_of(load(in, i), u), bins);
        if (bins.privatised) {
            count_at(mine, (unsigned int)bin * copies * 4);
        } else if (bin < bins.count) {
            atomicAdd(counts + bin, 1ull);
        }
    }
    if (!bins.privatised) return;
    __syncthreads();
    // Add this block's counts to the output's, one bin per thread: its copies
    // read from a different one in each lane (bank conflicts again otherwise).
    #pragma unroll 1
    for (int bin = threadIdx.x; bin < (int)bins.count; bin += BLOCK_THREADS) {
        unsigned int total = 0;
        #pragma unroll 1
        for (int c = 0; c < copies; ++c) total += shared[bin * copies + ((c + lane_id()) & (copies - 1))];
        if (total != 0) atomicAdd(counts + bin, (unsigned long long)total);
    }
}

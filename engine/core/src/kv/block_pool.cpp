#include "kv/block_pool.h"

#include <algorithm>

#include "lantern/error.h"

namespace lantern::kv {

BlockPool::BlockPool(uint32_t num_blocks, uint32_t block_tokens, uint64_t model_identity)
    : block_tokens_(block_tokens), model_identity_(model_identity), blocks_(num_blocks) {
    if (num_blocks == 0 || block_tokens == 0) throw Error(ErrorCode::InvalidArgument, "KV pool needs blocks");
    for (uint32_t b = 0; b < num_blocks; ++b) {
        blocks_[b].queue_pos = free_queue_.insert(free_queue_.end(), b);
        blocks_[b].in_queue = true;
    }
}

uint64_t BlockPool::chain_hash(uint64_t parent, std::span<const int32_t> tokens) const {
    // FNV-1a over (model identity, parent hash, token ids), finished with a 64-bit mixer.
    uint64_t h = 0xcbf29ce484222325ull;
    auto mix = [&](uint64_t v) {
        for (int i = 0; i < 8; ++i) h = (h ^ ((v >> (8 * i)) & 0xff)) * 0x100000001b3ull;
    };
    mix(model_identity_);
    mix(parent);
    for (int32_t t : tokens) mix(static_cast<uint32_t>(t));
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
}

BlockPool::Sequence& BlockPool::seq(SequenceId id) {
    auto it = seqs_.find(id);
    if (it == seqs_.end()) throw Error(ErrorCode::InvalidArgument, "no sequence " + std::to_string(id));
    return it->second;
}
const BlockPool::Sequence& BlockPool::seq(SequenceId id) const {
    auto it = seqs_.find(id);
    if (it == seqs_.end()) throw Error(ErrorCode::InvalidArgument, "no sequence " + std::to_string(id));
    return it->second;
}

SequenceId BlockPool::create_sequence() {
    SequenceId id = next_id_++;
    seqs_[id] = Sequence{};
    return id;
}

void BlockPool::acquire(uint32_t b) {
    Block& blk = blocks_[b];
    if (blk.in_queue) {
        free_queue_.erase(blk.queue_pos);
        blk.in_queue = false;
    }
    ++blk.refcount;
    uint32_t used = num_blocks() - free_blocks();
    peak_used_ = std::max(peak_used_, used);
}

void BlockPool::release(uint32_t b) {
    Block& blk = blocks_[b];
    if (blk.refcount == 0) throw Error(ErrorCode::Internal, "KV block released twice");
    if (--blk.refcount > 0) return;
    // Cached blocks join the back (most recently used); empty ones the front (handed out first).
    blk.queue_pos =
        blk.hashed ? free_queue_.insert(free_queue_.end(), b) : free_queue_.insert(free_queue_.begin(), b);
    blk.in_queue = true;
}

uint32_t BlockPool::take_block() {
    if (free_queue_.empty())
        throw Error(ErrorCode::ContextFull,
                    "the KV cache is full: every block is in use by a running sequence");
    uint32_t b = free_queue_.front();
    Block& blk = blocks_[b];
    if (blk.hashed) {  // evict: it no longer stands for its tokens
        auto it = cache_.find(blk.hash);
        if (it != cache_.end() && it->second == b) cache_.erase(it);
        blk.hashed = false;
        blk.tokens.clear();
        ++evictions_;
    }
    acquire(b);
    return b;
}

SequenceId BlockPool::fork(SequenceId from, uint32_t* shared_tokens) {
    const Sequence& src = seq(from);
    if (src.released > 0)
        throw Error(ErrorCode::Internal, "fork of a sequence that gave back blocks (use adopt_window)");
    uint32_t full = static_cast<uint32_t>(src.tokens.size()) / block_tokens_;
    SequenceId id = create_sequence();
    Sequence& dst = seqs_[id];
    for (uint32_t i = 0; i < full; ++i) {
        acquire(src.table[i]);
        dst.table.push_back(src.table[i]);
    }
    dst.tokens.assign(src.tokens.begin(), src.tokens.begin() + full * block_tokens_);
    dst.hashes.assign(src.hashes.begin(), src.hashes.begin() + std::min<size_t>(src.hashes.size(), full));
    dst.hashed_blocks = static_cast<uint32_t>(dst.hashes.size());
    if (shared_tokens) *shared_tokens = full * block_tokens_;
    return id;
}

void BlockPool::free_sequence(SequenceId id) {
    Sequence& s = seq(id);
    // Release tail first so that, among this sequence's cached blocks, the deepest ones (least
    // likely to be shared by another prompt) are evicted first.
    for (auto it = s.table.rbegin(); it != s.table.rend(); ++it)
        if (*it != kReleased) release(*it);
    seqs_.erase(id);
}

void BlockPool::match_prefix(std::span<const int32_t> prompt, std::vector<uint32_t>& blocks,
                             std::vector<uint64_t>& hashes) const {
    blocks.clear();
    hashes.clear();
    if (prompt.size() < 2) return;
    uint64_t parent = 0;
    // Only full blocks, and never the last prompt token (its logits are needed).
    size_t max_blocks = (prompt.size() - 1) / block_tokens_;
    for (size_t i = 0; i < max_blocks; ++i) {
        auto toks = prompt.subspan(i * block_tokens_, block_tokens_);
        uint64_t h = chain_hash(parent, toks);
        auto it = cache_.find(h);
        if (it == cache_.end()) break;
        const Block& blk = blocks_[it->second];
        if (!blk.hashed || blk.parent != parent || !std::equal(toks.begin(), toks.end(), blk.tokens.begin()))
            break;  // hash collision: do not reuse
        blocks.push_back(it->second);
        hashes.push_back(h);
        parent = h;
    }
}

uint32_t BlockPool::peek_prefix(std::span<const int32_t> prompt, uint32_t* idle_blocks) const {
    std::vector<uint32_t> blocks;
    std::vector<uint64_t> hashes;
    match_prefix(prompt, blocks, hashes);
    if (idle_blocks) {
        *idle_blocks = 0;
        for (uint32_t b : blocks) *idle_blocks += blocks_[b].refcount == 0 ? 1 : 0;
    }
    return static_cast<uint32_t>(blocks.size()) * block_tokens_;
}

uint32_t BlockPool::reuse_prefix(SequenceId id, std::span<const int32_t> prompt, uint32_t limit) {
    Sequence& s = seq(id);
    last_query_ = static_cast<uint32_t>(prompt.size());
    last_hit_ = 0;
    query_tokens_ += prompt.size();
    if (!s.tokens.empty()) return 0;
    std::vector<uint32_t> blocks;
    std::vector<uint64_t> hashes;
    match_prefix(prompt, blocks, hashes);
    if (blocks.size() > limit / block_tokens_) {
        blocks.resize(limit / block_tokens_);
        hashes.resize(blocks.size());
    }
    for (size_t i = 0; i < blocks.size(); ++i) {
        acquire(blocks[i]);
        s.table.push_back(blocks[i]);
        s.hashes.push_back(hashes[i]);
    }
    s.tokens.assign(prompt.begin(), prompt.begin() + static_cast<ptrdiff_t>(blocks.size() * block_tokens_));
    s.hashed_blocks = static_cast<uint32_t>(s.hashes.size());
    last_hit_ = static_cast<uint32_t>(s.tokens.size());
    hit_tokens_ += last_hit_;
    return last_hit_;
}

uint32_t BlockPool::blocks_needed(SequenceId id, uint32_t n) const {
    const Sequence& s = seq(id);
    uint64_t have = s.table.size() * block_tokens_;
    uint64_t want = s.tokens.size() + n;
    return want <= have ? 0 : static_cast<uint32_t>((want - have + block_tokens_ - 1) / block_tokens_);
}

std::vector<uint32_t> BlockPool::append(SequenceId id, std::span<const int32_t> toks) {
    Sequence& s = seq(id);
    uint32_t need = blocks_needed(id, static_cast<uint32_t>(toks.size()));
    if (need > free_blocks())
        throw Error(ErrorCode::ContextFull, "the KV cache is full: " + std::to_string(need) +
                                                " more blocks needed, " + std::to_string(free_blocks()) +
                                                " free");
    for (uint32_t i = 0; i < need; ++i) s.table.push_back(take_block());
    std::vector<uint32_t> slots;
    slots.reserve(toks.size());
    for (int32_t t : toks) {
        uint32_t pos = static_cast<uint32_t>(s.tokens.size());
        slots.push_back(s.table[pos / block_tokens_] * block_tokens_ + pos % block_tokens_);
        s.tokens.push_back(t);
    }
    register_full_blocks(s);
    return slots;
}

void BlockPool::register_full_blocks(Sequence& s) {
    uint32_t full = static_cast<uint32_t>(s.tokens.size()) / block_tokens_;
    while (s.hashed_blocks < full) {
        uint32_t i = s.hashed_blocks;
        uint64_t parent = i == 0 ? 0 : s.hashes[i - 1];
        std::span<const int32_t> toks(s.tokens.data() + i * block_tokens_, block_tokens_);
        uint64_t h = chain_hash(parent, toks);
        s.hashes.push_back(h);
        uint32_t b = s.table[i];
        Block& blk = blocks_[b];
        if (!blk.hashed && cache_.find(h) == cache_.end()) {
            blk.hashed = true;
            blk.hash = h;
            blk.parent = parent;
            blk.tokens.assign(toks.begin(), toks.end());
            cache_[h] = b;
        }
        ++s.hashed_blocks;
    }
}

void BlockPool::truncate(SequenceId id, uint32_t n) {
    Sequence& s = seq(id);
    n = std::min<uint32_t>(n, static_cast<uint32_t>(s.tokens.size()));
    if (n == 0) return;
    uint32_t new_len = static_cast<uint32_t>(s.tokens.size()) - n;
    uint32_t first_cut = new_len / block_tokens_;  // blocks from here on lose tokens
    // The sequence's next tokens would be written into a kept partial block: another sequence
    // sharing it would read them as its own.
    if (new_len % block_tokens_ != 0 && s.table[first_cut] != kReleased &&
        blocks_[s.table[first_cut]].refcount > 1)
        throw Error(ErrorCode::InvalidArgument, "cannot truncate sequence " + std::to_string(id) +
                                                    " into a KV block it shares with another sequence");
    // The dropped tokens were never computed (a failed step) or will be overwritten: blocks of this
    // sequence alone that lose tokens leave the prefix cache, or a later prompt would reuse K/V
    // that does not belong to its tokens. Shared blocks were computed by whoever shares them.
    for (uint32_t i = first_cut; i < s.table.size(); ++i) {
        if (s.table[i] == kReleased) continue;
        Block& blk = blocks_[s.table[i]];
        if (blk.refcount != 1 || !blk.hashed) continue;
        auto it = cache_.find(blk.hash);
        if (it != cache_.end() && it->second == s.table[i]) cache_.erase(it);
        blk.hashed = false;
        blk.tokens.clear();
    }
    s.tokens.resize(new_len);
    uint32_t keep_blocks = static_cast<uint32_t>((s.tokens.size() + block_tokens_ - 1) / block_tokens_);
    while (s.table.size() > keep_blocks) {
        if (s.table.back() != kReleased) release(s.table.back());
        s.table.pop_back();
    }
    s.released = std::min<uint32_t>(s.released, static_cast<uint32_t>(s.table.size()));
    uint32_t full = static_cast<uint32_t>(s.tokens.size()) / block_tokens_;
    if (s.hashes.size() > full) s.hashes.resize(full);
    s.hashed_blocks = std::min(s.hashed_blocks, full);
}

void BlockPool::release_before(SequenceId id, uint32_t position) {
    Sequence& s = seq(id);
    const uint32_t before =
        std::min<uint32_t>(position / block_tokens_, static_cast<uint32_t>(s.tokens.size()) / block_tokens_);
    for (; s.released < before; ++s.released) {
        if (s.table[s.released] != kReleased) release(s.table[s.released]);
        s.table[s.released] = kReleased;
    }
}

uint32_t BlockPool::first_held_position(SequenceId id) const {
    return seq(id).released * block_tokens_;
}

bool BlockPool::find_window(std::span<const int32_t> prompt, uint32_t end, uint32_t from,
                            std::vector<uint32_t>& blocks, std::vector<uint64_t>& hashes) const {
    blocks.clear();
    hashes.clear();
    if (end % block_tokens_ != 0 || end > prompt.size()) return false;
    const uint32_t first = std::min(from, end) / block_tokens_;
    uint64_t parent = 0;
    for (uint32_t i = 0; i < end / block_tokens_; ++i) {
        const auto toks = prompt.subspan(static_cast<size_t>(i) * block_tokens_, block_tokens_);
        const uint64_t h = chain_hash(parent, toks);
        hashes.push_back(h);
        if (i >= first) {
            const auto it = cache_.find(h);
            if (it == cache_.end()) return false;
            const Block& blk = blocks_[it->second];
            if (!blk.hashed || blk.parent != parent ||
                !std::equal(toks.begin(), toks.end(), blk.tokens.begin()))
                return false;  // a hash collision: not these tokens' K/V
            blocks.push_back(it->second);
        }
        parent = h;
    }
    return true;
}

bool BlockPool::window_cached(std::span<const int32_t> prompt, uint32_t end, uint32_t from) const {
    std::vector<uint32_t> blocks;
    std::vector<uint64_t> hashes;
    return find_window(prompt, end, from, blocks, hashes);
}

bool BlockPool::adopt_window(SequenceId id, std::span<const int32_t> prompt, uint32_t end, uint32_t from) {
    Sequence& s = seq(id);
    if (!s.tokens.empty()) return false;
    std::vector<uint32_t> blocks;
    std::vector<uint64_t> hashes;
    if (!find_window(prompt, end, from, blocks, hashes)) return false;
    s.released = end / block_tokens_ - static_cast<uint32_t>(blocks.size());
    s.table.assign(s.released, kReleased);
    for (uint32_t b : blocks) {
        acquire(b);
        s.table.push_back(b);
    }
    s.tokens.assign(prompt.begin(), prompt.begin() + end);
    s.hashes = std::move(hashes);
    s.hashed_blocks = end / block_tokens_;
    return true;
}

const std::vector<uint32_t>& BlockPool::block_table(SequenceId id) const {
    return seq(id).table;
}
const std::vector<int32_t>& BlockPool::tokens(SequenceId id) const {
    return seq(id).tokens;
}

std::optional<uint64_t> BlockPool::block_hash(uint32_t b) const {
    if (!blocks_[b].hashed) return std::nullopt;
    return blocks_[b].hash;
}

void BlockPool::fill_stats(KvStats& st) const {
    st.block_tokens = block_tokens_;
    st.total_blocks = num_blocks();
    st.used_blocks = st.cached_blocks = st.empty_blocks = 0;
    for (const auto& b : blocks_) {
        if (b.refcount > 0)
            ++st.used_blocks;
        else if (b.hashed)
            ++st.cached_blocks;
        else
            ++st.empty_blocks;
    }
    st.capacity_tokens = static_cast<uint64_t>(num_blocks()) * block_tokens_;
    st.prefix_query_tokens = query_tokens_;
    st.prefix_hit_tokens = hit_tokens_;
    st.last_query_tokens = last_query_;
    st.last_hit_tokens = last_hit_;
    st.evictions = evictions_;
    st.peak_used_blocks = peak_used_;
    st.sequences.clear();
    for (const auto& [id, s] : seqs_)
        st.sequences.push_back(
            {id, static_cast<uint32_t>(s.tokens.size()), static_cast<uint32_t>(s.table.size()) - s.released});
}

std::vector<KvBlockInfo> BlockPool::block_map() const {
    std::vector<KvBlockInfo> map(blocks_.size());
    for (uint32_t b = 0; b < blocks_.size(); ++b) {
        map[b].block = b;
        map[b].full_hashed = blocks_[b].hashed;
        map[b].cached = blocks_[b].hashed && blocks_[b].refcount == 0;
        map[b].filled = blocks_[b].hashed ? block_tokens_ : 0;
    }
    for (const auto& [id, s] : seqs_)
        for (uint32_t i = s.released; i < s.table.size(); ++i) {
            auto& info = map[s.table[i]];
            info.owners.push_back(id);
            uint32_t filled =
                static_cast<uint32_t>(std::min<size_t>(block_tokens_, s.tokens.size() - i * block_tokens_));
            info.filled = std::max(info.filled, filled);
            if (info.first_position < 0) info.first_position = static_cast<int32_t>(i * block_tokens_);
        }
    return map;
}

}  // namespace lantern::kv

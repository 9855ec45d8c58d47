// Engine: ties the GGUF file, the tokenizer, the device model and the paged KV bookkeeping
// together behind lantern/engine.h.
#include "lantern/engine.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>

#include "kv/block_pool.h"
#include "lantern/error.h"
#include "lantern/gguf.h"
#include "lantern/tokenizer.h"
#include "model/llama_config.h"
#include "model/llama_model.h"
#include "model/memory_plan.h"
#include "runtime/engine_test_hooks.h"
#include "vulkan/context.h"

namespace lantern {

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

uint64_t model_identity(const GgufFile& g, const ModelInfo& m) {
    uint64_t h = 0xcbf29ce484222325ull;
    auto mix = [&](const void* p, size_t n) {
        for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<const uint8_t*>(p)[i]) * 0x100000001b3ull;
    };
    mix(m.name.data(), m.name.size());
    uint64_t fs = g.file_size();
    mix(&fs, 8);
    mix(&m.parameters, 8);
    return h;
}

class EngineImpl final : public Engine {
public:
    EngineImpl(const std::string& path, const EngineOptions& o, const EngineTestHooks& hooks = {})
        : options_(o) {
        auto t0 = Clock::now();
        gguf_ = GgufFile::open(path);
        info_ = model::read_llama_config(*gguf_);
        model::add_fused_tensor_views(*gguf_, info_);
        tokenizer_ = Tokenizer::from_gguf(*gguf_);
        template_source_ = gguf_->get_string("tokenizer.chat_template").value_or("");
        if (static_cast<uint32_t>(tokenizer_->vocab_size()) != info_.vocab)
            throw Error(ErrorCode::InvalidModelFile,
                        path + ": the tokenizer has " + std::to_string(tokenizer_->vocab_size()) +
                            " tokens but the embedding has " + std::to_string(info_.vocab));
        vk::ContextOptions co;
        co.device_selector = o.device_selector;
        co.validation = o.validation;
        co.on_validation_message = o.on_validation_message;
        co.pipeline_cache_dir = o.pipeline_cache_dir;
        ctx_ = std::make_unique<vk::Context>(co);

        const model::ModelLimits lim = model::limits_for(info_, o, hooks);
        context_ = lim.context_length;
        auto tp = Clock::now();
        model_ = std::make_unique<model::LlamaModel>(*ctx_, *gguf_, info_, lim);
        pipelines_ms_ = ms_since(tp);
        info_.weight_bytes = model_->weight_bytes();
        info_.decode_read_bytes = model_->matmul_weight_bytes();
        info_.decode_read_bytes_by_layout.assign(model_->matmul_weight_bytes_by_layout().begin(),
                                                 model_->matmul_weight_bytes_by_layout().end());
        pool_ =
            std::make_unique<kv::BlockPool>(lim.kv_blocks, lim.block_tokens, model_identity(*gguf_, info_));
        // Sliding-window layers with a pool of their own: each sequence has a twin there, created,
        // cut and freed with it, holding only its window (blocks before it are given back at each step).
        if (lim.kv_blocks_local) {
            local_ = std::make_unique<kv::BlockPool>(lim.kv_blocks_local, lim.block_tokens,
                                                     model_identity(*gguf_, info_));
            window_ = info_.sliding_window;
        }
        limits_ = lim;
        ctx_->save_pipeline_cache();
        load_ms_ = ms_since(t0);
    }

    const ModelInfo& model() const override { return info_; }
    const DeviceInfo& device() const override { return ctx_->info(); }
    const Tokenizer& tokenizer() const override { return *tokenizer_; }
    const std::string& chat_template_source() const override { return template_source_; }
    uint32_t context_length() const override { return context_; }

    SequenceId create_sequence() override { return new_sequence(); }
    SequenceId fork_sequence(SequenceId from) override {
        uint32_t shared = 0;
        std::vector<int32_t> all = pool_->tokens(from);
        SequenceId id = 0;
        if (local_) {  // the windows' blocks are found by their hashes (held by `from`, or cached)
            id = new_sequence();
            shared = reuse(id, all);
        } else {
            id = pool_->fork(from, &shared);
        }
        if (shared < all.size()) {
            try {
                run_prefill(id, std::span<const int32_t>(all).subspan(shared), false);
            } catch (...) {
                drop_sequence(id);
                throw;
            }
        }
        return id;
    }
    void free_sequence(SequenceId seq) override { drop_sequence(seq); }
    uint32_t sequence_length(SequenceId seq) const override {
        return static_cast<uint32_t>(pool_->tokens(seq).size());
    }
    std::vector<int32_t> sequence_tokens(SequenceId seq) const override { return pool_->tokens(seq); }

    using Engine::prefill;
    std::vector<float> prefill(SequenceId seq, std::span<const int32_t> tokens,
                               const PrefillProgress& progress) override {
        if (tokens.empty()) throw Error(ErrorCode::InvalidArgument, "prefill needs at least one token");
        uint32_t len = sequence_length(seq);
        if (len + tokens.size() > context_)
            throw Error(ErrorCode::ContextFull,
                        "the conversation needs " + std::to_string(len + tokens.size()) +
                            " tokens but the context holds " + std::to_string(context_));
        // Room in the pool, checked before anything is touched: the cached blocks a prefix hit takes
        // off the free queue, plus new blocks for the rest.
        uint32_t reusable = 0, idle = 0;
        if (len == 0) reusable = reusable_prefix(tokens, &idle);
        uint32_t need = pool_->blocks_needed(seq, static_cast<uint32_t>(tokens.size()) - reusable) + idle;
        if (need > pool_->free_blocks())
            throw Error(ErrorCode::ContextFull, "the KV cache is full: the prompt needs " +
                                                    std::to_string(need) + " more blocks, " +
                                                    std::to_string(pool_->free_blocks()) + " free");
        uint32_t reused = 0;
        if (len == 0) reused = reuse(seq, tokens);
        last_reused_ = reused;
        last_computed_ = static_cast<uint32_t>(tokens.size()) - reused;
        try {
            auto logits = run_prefill(seq, tokens.subspan(reused), true, progress);
            if (logits.empty()) last_computed_ = sequence_length(seq) - len - reused;  // stopped part-way
            return logits;
        } catch (...) {
            // All or nothing: earlier chunks and the reused prefix are dropped too.
            cut(seq, sequence_length(seq) - len);
            if (!window_held(seq)) rebuild_window(seq);  // later chunks gave back len's window
            throw;
        }
    }

    uint32_t attach_cached_prefix(SequenceId seq, std::span<const int32_t> prompt) override {
        if (sequence_length(seq) != 0 || prompt.empty()) return 0;
        return reuse(seq, prompt);
    }

    std::vector<std::vector<float>> step(std::span<const StepItem> items) override {
        // The whole step is checked before any sequence is touched: it fails as a whole, and a
        // failed step must not have evicted cached blocks for items that never ran.
        std::map<SequenceId, uint32_t> adding;
        for (const auto& it : items) {
            if (it.tokens.empty()) throw Error(ErrorCode::InvalidArgument, "a step item has no tokens");
            uint32_t& n = adding[it.sequence];
            n += static_cast<uint32_t>(it.tokens.size());
            if (sequence_length(it.sequence) + n > context_)
                throw Error(ErrorCode::ContextFull, "sequence " + std::to_string(it.sequence) +
                                                        " reached the context length (" +
                                                        std::to_string(context_) + " tokens)");
        }
        uint32_t need = 0;
        for (const auto& [seq, n] : adding) need += pool_->blocks_needed(seq, n);
        if (need > pool_->free_blocks())
            throw Error(ErrorCode::ContextFull, "the KV cache is full: this step needs " +
                                                    std::to_string(need) + " more blocks, " +
                                                    std::to_string(pool_->free_blocks()) + " free");
        if (local_) {
            // What left every window of a sequence goes back first (no later token of it attends
            // there; a failed step rolls back to its length now, whose window stays held).
            uint32_t need_local = 0;
            for (const auto& [seq, n] : adding) {
                const SequenceId l = local_id(seq);
                local_->release_before(l, window_start(sequence_length(seq)));
                need_local += local_->blocks_needed(l, n);
            }
            if (need_local > local_->free_blocks())
                throw Error(ErrorCode::ContextFull,
                            "the KV cache of the sliding-window layers is full: this step needs " +
                                std::to_string(need_local) + " more blocks, " +
                                std::to_string(local_->free_blocks()) + " free");
        }
        model::StepInput in;
        std::vector<std::pair<SequenceId, uint32_t>> appended;
        try {
            for (size_t i = 0; i < items.size(); ++i) {
                const auto& it = items[i];
                uint32_t len = sequence_length(it.sequence);
                auto slots = pool_->append(it.sequence, it.tokens);
                std::vector<uint32_t> local_slots;
                try {
                    if (local_) local_slots = local_->append(local_id(it.sequence), it.tokens);
                } catch (...) {
                    pool_->truncate(it.sequence, static_cast<uint32_t>(it.tokens.size()));
                    throw;
                }
                appended.emplace_back(it.sequence, static_cast<uint32_t>(it.tokens.size()));
                uint32_t table_off = static_cast<uint32_t>(in.tables.size());
                const auto& table = pool_->block_table(it.sequence);
                in.tables.insert(in.tables.end(), table.begin(), table.end());
                const uint32_t local_off = static_cast<uint32_t>(in.tables_local.size());
                if (local_) {
                    const auto& local_table = local_->block_table(local_id(it.sequence));
                    in.tables_local.insert(in.tables_local.end(), local_table.begin(), local_table.end());
                }
                for (size_t k = 0; k < it.tokens.size(); ++k) {
                    in.tokens.push_back(it.tokens[k]);
                    in.info.push_back(
                        {len + static_cast<uint32_t>(k), table_off, slots[k], static_cast<uint32_t>(i)});
                    if (local_)
                        in.info_local.push_back({len + static_cast<uint32_t>(k), local_off, local_slots[k],
                                                 static_cast<uint32_t>(i)});
                }
                if (it.want_all_logits) {
                    for (size_t k = 0; k < it.tokens.size(); ++k)
                        in.logit_rows.push_back(
                            static_cast<uint32_t>(in.tokens.size() - it.tokens.size() + k));
                } else if (it.want_logits) {
                    in.logit_rows.push_back(static_cast<uint32_t>(in.tokens.size() - 1));
                }
            }
            in.capture_layer = capture_layer_;
            std::vector<float> flat;
            const bool timed = options_.profile || profile_steps_ > 0;
            if (profile_steps_ > 0) --profile_steps_;
            model_->forward(in, flat, timed, &profile_, capture_layer_ >= 0 ? &attention_ : nullptr);
            std::vector<std::vector<float>> out(in.logit_rows.size());
            for (size_t r = 0; r < out.size(); ++r)
                out[r].assign(flat.begin() + r * info_.vocab, flat.begin() + (r + 1) * info_.vocab);
            return out;
        } catch (...) {
            // Nothing is half-done: tokens of a failed step are removed from their sequences.
            for (auto& [seq, n] : appended) cut(seq, n);
            throw;
        }
    }

    double warm_up(uint32_t shape) override {
        // Each shape runs different kernels (see MatmulOp::record and LlamaModel::forward): more
        // than 32 tokens (prefill, two tokens per lane on CPU drivers), one token (fused layers on
        // lavapipe), 5-24 (the decode layout, four tokens per lane), 25-32 (prefill, one per lane),
        // one token with an attention capture (the separate decode kernels), and a long prompt
        // (prefill, four tokens per lane on CPU drivers); each from position 0, shortened to the
        // step limit and the context.
        struct Shape {
            uint32_t tokens;
            int32_t capture;
        };
        static constexpr Shape kShapes[kWarmUpShapes] = {{40, -1}, {1, -1}, {8, -1},
                                                         {28, -1}, {1, 0},  {128, -1}};
        if (shape >= kWarmUpShapes)
            throw Error(ErrorCode::InvalidArgument,
                        "warm-up shape " + std::to_string(shape) + " does not exist");
        const auto t = Clock::now();
        const uint32_t n = std::min({kShapes[shape].tokens, limits_.max_step_tokens, context_});
        const SequenceId seq = new_sequence();
        // Only empty blocks: taking a cached one would evict a prefix someone may reuse.
        KvStats kv;
        pool_->fill_stats(kv);
        if (pool_->blocks_needed(seq, n) > kv.empty_blocks ||
            (local_ && local_->blocks_needed(local_id(seq), n) > local_empty_blocks())) {
            drop_sequence(seq);  // the KV budget is in use: nothing to do
            return ms_since(t);
        }
        const uint32_t peak = pool_->peak_used_blocks();
        const StepProfile profile = profile_;
        const uint32_t timed_steps = profile_steps_;
        const AttentionSnapshot attention = attention_;
        const int32_t capture = capture_layer_;
        auto restore = [&] {
            profile_steps_ = timed_steps;
            // truncate() also takes the blocks out of the prefix cache (free_sequence would keep them).
            cut(seq, sequence_length(seq));
            drop_sequence(seq);
            pool_->restore_peak_used_blocks(peak);
            capture_layer_ = capture;
            profile_ = profile;
            attention_ = attention;
        };
        try {
            StepItem item;
            item.sequence = seq;
            for (uint32_t i = 0; i < n; ++i) item.tokens.push_back(static_cast<int32_t>(i % info_.vocab));
            capture_layer_ = kShapes[shape].capture;
            step(std::span<const StepItem>(&item, 1));
        } catch (...) {
            restore();
            throw;
        }
        restore();
        return ms_since(t);
    }

    double warm_up_batched_decode(uint32_t sequences) override {
        const auto t = Clock::now();
        if (sequences < 2 || sequences > limits_.max_logit_rows)
            throw Error(ErrorCode::InvalidArgument,
                        "a batched decode warm-up needs 2 to " + std::to_string(limits_.max_logit_rows) +
                            " sequences (the logit rows of a step), not " + std::to_string(sequences));
        KvStats kv;
        pool_->fill_stats(kv);
        if (sequences > kv.empty_blocks || sequences > limits_.max_step_tokens ||
            (local_ && sequences > local_empty_blocks()))
            return ms_since(t);  // no room now
        const uint32_t peak = pool_->peak_used_blocks();
        const StepProfile profile = profile_;
        const uint32_t timed_steps = profile_steps_;
        std::vector<StepItem> items(sequences);
        for (uint32_t i = 0; i < sequences; ++i) {
            items[i].sequence = new_sequence();
            items[i].tokens = {static_cast<int32_t>(i % info_.vocab)};
        }
        auto restore = [&] {
            for (const auto& it : items) {
                cut(it.sequence, sequence_length(it.sequence));
                drop_sequence(it.sequence);
            }
            pool_->restore_peak_used_blocks(peak);
            profile_ = profile;
            profile_steps_ = timed_steps;
        };
        try {
            step(items);
        } catch (...) {
            restore();
            throw;
        }
        restore();
        return ms_since(t);
    }

    uint32_t last_reused_tokens() const override { return last_reused_; }
    uint32_t last_computed_tokens() const override { return last_computed_; }

    uint32_t kv_free_blocks() const override { return pool_->free_blocks(); }
    KvStats kv_stats() const override {
        KvStats s;
        pool_->fill_stats(s);
        s.layers = info_.n_layers;
        s.kv_heads = info_.n_kv_heads;
        s.head_dim = info_.head_dim;
        s.element_bytes = limits_.kv_f16 ? 2 : 4;
        s.bytes_per_token = model::LlamaModel::kv_bytes_per_token(info_, limits_.kv_f16);
        s.capacity_bytes = s.capacity_tokens * s.bytes_per_token;
        if (local_) {  // the sliding-window layers' pool, apart
            KvStats l;
            local_->fill_stats(l);
            s.window = window_;
            s.local_layers =
                static_cast<uint32_t>(std::count(info_.local_layers.begin(), info_.local_layers.end(), true));
            s.local_total_blocks = l.total_blocks;
            s.local_used_blocks = l.used_blocks;
            const uint64_t per_layer_token = 2ull * info_.n_kv_heads * info_.head_dim * s.element_bytes;
            // Bytes per token and capacity count the layers that keep every position; the local
            // layers' blocks are their own.
            s.bytes_per_token = per_layer_token * (info_.n_layers - s.local_layers);
            s.capacity_bytes = s.capacity_tokens * s.bytes_per_token;
            s.local_capacity_bytes =
                uint64_t{l.total_blocks} * l.block_tokens * per_layer_token * s.local_layers;
        }
        return s;
    }
    std::vector<KvBlockInfo> kv_block_map() const override { return pool_->block_map(); }
    const StepProfile& last_step_profile() const override { return profile_; }
    void profile_steps(uint32_t steps) override { profile_steps_ = steps; }
    void capture_attention(int32_t layer) override {
        capture_layer_ = layer >= 0 && static_cast<uint32_t>(layer) < info_.n_layers ? layer : -1;
    }
    const AttentionSnapshot& last_attention() const override { return attention_; }
    double load_ms() const override { return load_ms_; }
    double pipelines_ms() const override { return pipelines_ms_; }
    bool pipeline_cache_was_warm() const override { return ctx_->pipeline_cache_loaded(); }

private:
    SequenceId new_sequence() {
        const SequenceId id = pool_->create_sequence();
        if (local_) local_of_[id] = local_->create_sequence();
        return id;
    }
    SequenceId local_id(SequenceId seq) const {
        const auto it = local_of_.find(seq);
        if (it == local_of_.end())
            throw Error(ErrorCode::InvalidArgument, "no sequence " + std::to_string(seq));
        return it->second;
    }
    void drop_sequence(SequenceId seq) {
        if (local_) {
            local_->free_sequence(local_id(seq));
            local_of_.erase(seq);
        }
        pool_->free_sequence(seq);
    }
    // Drops the last n tokens of the sequence in both pools.
    void cut(SequenceId seq, uint32_t n) {
        pool_->truncate(seq, n);
        if (local_) local_->truncate(local_id(seq), n);
    }
    uint32_t local_empty_blocks() const {
        KvStats l;
        local_->fill_stats(l);
        return l.empty_blocks;
    }
    // The first position a token at `len` attends to in a sliding-window layer.
    uint32_t window_start(uint32_t len) const { return len + 1 > window_ ? len + 1 - window_ : 0; }
    // Whether the sliding-window layers still hold what the sequence's next token attends to.
    bool window_held(SequenceId seq) const {
        return !local_ || local_->first_held_position(local_id(seq)) <= window_start(sequence_length(seq));
    }
    // How many tokens of `prompt` the prefix cache gives an empty sequence: with sliding-window
    // layers, the longest cached prefix (in blocks) whose window before it is cached too.
    uint32_t reusable_prefix(std::span<const int32_t> prompt, uint32_t* idle = nullptr) const {
        uint32_t r = pool_->peek_prefix(prompt, idle);
        if (local_)
            while (r > 0 && !local_->window_cached(prompt, r, window_start(r))) r -= limits_.block_tokens;
        return r;
    }
    uint32_t reuse(SequenceId seq, std::span<const int32_t> prompt) {
        const uint32_t r = pool_->reuse_prefix(seq, prompt, reusable_prefix(prompt));
        if (local_ && r > 0 && !local_->adopt_window(local_id(seq), prompt, r, window_start(r))) {
            cut(seq, r);  // cannot happen (reusable_prefix found them): compute it all instead
            return 0;
        }
        return r;
    }
    // A prefill that failed after later chunks gave back the window before the sequence's length
    // (the rollback's target): recompute the sequence from the longest prefix whose window is
    // cached. If that fails too, the sequence is left empty.
    void rebuild_window(SequenceId seq) {
        const std::vector<int32_t> tokens = pool_->tokens(seq);
        cut(seq, static_cast<uint32_t>(tokens.size()));
        try {
            const uint32_t r = reuse(seq, tokens);
            if (r < tokens.size()) run_prefill(seq, std::span<const int32_t>(tokens).subspan(r), false);
        } catch (...) {
            cut(seq, sequence_length(seq));
        }
    }

    std::vector<float> run_prefill(SequenceId seq, std::span<const int32_t> tokens, bool want_logits,
                                   const PrefillProgress& progress = {}) {
        std::vector<float> logits;
        for (size_t done = 0; done < tokens.size(); done += limits_.max_step_tokens) {
            if (done > 0 && progress &&
                !progress(static_cast<uint32_t>(done), static_cast<uint32_t>(tokens.size())))
                return {};  // stopped: the chunks done stay
            size_t n = std::min<size_t>(limits_.max_step_tokens, tokens.size() - done);
            StepItem item;
            item.sequence = seq;
            item.tokens.assign(tokens.begin() + done, tokens.begin() + done + n);
            item.want_logits = want_logits && done + n == tokens.size();
            auto out = step(std::span<const StepItem>(&item, 1));
            if (!out.empty()) logits = std::move(out[0]);
        }
        return logits;
    }

    EngineOptions options_;
    std::unique_ptr<GgufFile> gguf_;
    ModelInfo info_;
    std::unique_ptr<Tokenizer> tokenizer_;
    std::string template_source_;
    std::unique_ptr<vk::Context> ctx_;
    std::unique_ptr<model::LlamaModel> model_;
    std::unique_ptr<kv::BlockPool> pool_;
    std::unique_ptr<kv::BlockPool> local_;       // sliding-window layers' own pool, or none
    std::map<SequenceId, SequenceId> local_of_;  // a sequence's twin in local_
    uint32_t window_ = 0;                        // ModelInfo::sliding_window when local_
    model::ModelLimits limits_;
    uint32_t context_ = 0;
    uint32_t last_reused_ = 0, last_computed_ = 0;
    StepProfile profile_;
    uint32_t profile_steps_ = 0;  // steps still to time (profile_steps)
    int32_t capture_layer_ = -1;
    AttentionSnapshot attention_;
    double load_ms_ = 0, pipelines_ms_ = 0;
};

}  // namespace

std::unique_ptr<Engine> Engine::load(const std::string& gguf_path, const EngineOptions& options) {
    return std::make_unique<EngineImpl>(gguf_path, options);
}

std::unique_ptr<Engine> load_engine_for_test(const std::string& gguf_path, const EngineOptions& options,
                                             const EngineTestHooks& hooks) {
    return std::make_unique<EngineImpl>(gguf_path, options, hooks);
}

}  // namespace lantern

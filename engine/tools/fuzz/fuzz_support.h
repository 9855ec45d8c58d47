// What the fuzz targets share: a small byte-level BPE tokenizer built in memory (every byte a
// token, a few merges, the chat markers), and an Engine that has that tokenizer and nothing else,
// so the OpenAI request layer and JSON mode run without a model or a device.
#pragma once
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include "lantern/engine.h"
#include "lantern/tokenizer.h"

namespace lantern::fuzz {

// Well-formed UTF-8 (Unicode's table 3-7: no overlong forms, surrogates or code points past 10FFFF).
bool valid_utf8(std::string_view s);

// `pre`: tokenizer.ggml.pre ("llama-bpe", "qwen2", ...). Built once per name and kept.
const Tokenizer& small_bpe_tokenizer(const std::string& pre);

// An Engine whose tokenizer is small_bpe_tokenizer(pre) and whose context holds `context` tokens;
// every call a request layer does not make throws std::logic_error.
class TokenizerOnlyEngine final : public Engine {
public:
    TokenizerOnlyEngine(const std::string& pre, uint32_t context, std::string chat_template = {});
    const ModelInfo& model() const override { return model_; }
    const DeviceInfo& device() const override { return device_; }
    const Tokenizer& tokenizer() const override { return tokenizer_; }
    const std::string& chat_template_source() const override { return template_; }
    uint32_t context_length() const override { return context_; }
    SequenceId create_sequence() override { unused(); }
    SequenceId fork_sequence(SequenceId) override { unused(); }
    void free_sequence(SequenceId) override { unused(); }
    uint32_t sequence_length(SequenceId) const override { unused(); }
    std::vector<int32_t> sequence_tokens(SequenceId) const override { unused(); }
    using Engine::prefill;
    std::vector<float> prefill(SequenceId, std::span<const int32_t>, const PrefillProgress&) override {
        unused();
    }
    uint32_t attach_cached_prefix(SequenceId, std::span<const int32_t>) override { unused(); }
    std::vector<std::vector<float>> step(std::span<const StepItem>) override { unused(); }
    uint32_t last_reused_tokens() const override { unused(); }
    uint32_t last_computed_tokens() const override { unused(); }
    KvStats kv_stats() const override { unused(); }
    uint32_t kv_free_blocks() const override { unused(); }
    std::vector<KvBlockInfo> kv_block_map() const override { unused(); }
    const StepProfile& last_step_profile() const override { unused(); }
    void profile_steps(uint32_t) override { unused(); }
    void capture_attention(int32_t) override { unused(); }
    const AttentionSnapshot& last_attention() const override { unused(); }
    using Engine::warm_up;
    double warm_up(uint32_t) override { unused(); }
    double warm_up_batched_decode(uint32_t) override { unused(); }
    double load_ms() const override { return 0; }
    double pipelines_ms() const override { return 0; }
    bool pipeline_cache_was_warm() const override { return false; }

private:
    [[noreturn]] static void unused() { throw std::logic_error("not part of a request layer's work"); }
    const Tokenizer& tokenizer_;
    uint32_t context_;
    std::string template_;
    ModelInfo model_;
    DeviceInfo device_;
};

}  // namespace lantern::fuzz

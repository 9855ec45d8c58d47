// Value types that cross the thread boundary between InferenceWorker and the UI.
//
// They are the engine's own plain structs (no pointers into engine state), registered with Qt's
// meta-type system so queued signals can copy them from the worker thread to the UI thread.
#pragma once
#include <QMetaType>
#include <QString>
#include <vector>

#include "lantern/chat.h"
#include "lantern/device.h"
#include "lantern/engine.h"
#include "lantern/kv_cache.h"
#include "lantern/sampling.h"

// Timings and facts of one successful model load, next to ModelInfo and DeviceInfo.
struct LoadReport {
    double load_ms = 0;       // the whole Engine::load()
    double pipelines_ms = 0;  // pipeline creation within it
    bool pipeline_cache_warm = false;
    uint32_t context_length = 0;  // per conversation
    uint32_t sequences = 0;       // conversations the KV cache holds at full context
    bool chat_template = false;   // false: completion mode (the text is continued)
    QString template_name;        // the template's family ("chatml", "deepseek-r1", "completion")
    // Which renderer writes the prompts: the model's own Jinja template, or a built-in family
    // (ChatTemplate::description) and why; the template's text ("" when the model has none).
    bool template_is_models = false;
    QString template_renderer;
    QString template_fallback_reason;
    QString template_source;
    bool replies_open_in_reasoning = false;  // the generation prompt opens "<think>" (DeepSeek-R1)
    bool thinking_switch = false;            // the template lets the model think first or not (Qwen3)
    QString tokenizer_kind;                  // "sentencepiece", "byte-level BPE (llama-bpe)"
};

// The KV cache as the worker saw it after a step: counters plus one entry per block.
struct KvSnapshot {
    lantern::KvStats stats;
    std::vector<lantern::KvBlockInfo> blocks;
    lantern::SequenceId active_sequence = 0;         // the conversation's own sequence
    std::vector<lantern::SequenceId> api_sequences;  // the API server's replies' (ApiServer::sequences)
};

using TokenCandidates = std::vector<lantern::TokenCandidate>;
using DeviceList = std::vector<lantern::DeviceInfo>;

// What one token attended to, for the words view of the attention panel: the captured layer's
// weights of the token at `position` over positions 0..nPositions-1, per head, each head scaled to
// its own maximum and stored in a byte (weight ≈ byte / 255 × headMax) — heads × positions bytes a
// token, a quarter of the floats, kept for every token of a reply while capture is on.
struct AttentionRow {
    quint32 position = 0, layer = 0, heads = 0, nPositions = 0;
    std::vector<float> headMax;   // per head
    std::vector<quint8> weights;  // heads × nPositions, head-major
    // The token's weights over the positions for `head` (-1: the mean over heads).
    std::vector<float> over(int head) const;
    static AttentionRow from(const lantern::AttentionSnapshot& snapshot);
};

// The tokens of the conversation's sequence, as the worker last saw them (after a turn, after a
// restore): ids, and the bytes each stands for — its text, or its spelling for a special token
// ("<|im_start|>"), so the words view shows the template's markers too.
struct ConversationTokens {
    std::vector<int32_t> ids;
    std::vector<std::string> bytes;
    std::vector<bool> special;
};

// Tokens of a reply that the worker sends together (InferenceWorker::tokensGenerated): those
// generated since its last batch, in order.
struct TokenBatch {
    QString text;                 // their visible text, concatenated (may be empty)
    std::vector<double> stepMs;   // wall time of each one's step, one entry per token
    std::vector<int32_t> tokens;  // their ids, in order
    TokenCandidates candidates;   // the most likely candidates at the last token's position
    quint32 position = 0;         // the last token's position
    // While attention capture is on: what each token fed in this batch's steps attended to.
    std::vector<AttentionRow> attention;
    // Text released without a step of its own (held back earlier as a possible stop string,
    // released when the reply ends) is in `text` with no entry in stepMs or tokens.
    bool empty() const { return text.isEmpty() && tokens.empty() && attention.empty(); }
};

Q_DECLARE_METATYPE(lantern::SamplingSettings)
Q_DECLARE_METATYPE(lantern::ModelInfo)
Q_DECLARE_METATYPE(lantern::DeviceInfo)
Q_DECLARE_METATYPE(lantern::TurnStats)
Q_DECLARE_METATYPE(lantern::MessageFit)
Q_DECLARE_METATYPE(lantern::AttentionSnapshot)
Q_DECLARE_METATYPE(lantern::StepProfile)
Q_DECLARE_METATYPE(LoadReport)
Q_DECLARE_METATYPE(KvSnapshot)
Q_DECLARE_METATYPE(TokenCandidates)
Q_DECLARE_METATYPE(TokenBatch)
Q_DECLARE_METATYPE(DeviceList)
Q_DECLARE_METATYPE(ConversationTokens)

// Registers the types above for queued connections. Safe to call more than once.
void registerEngineMetaTypes();

// "NVIDIA GeForce RTX 4070 (discrete GPU)" / "llvmpipe (CPU (software Vulkan))": what the status
// bar and the model panel show for a device.
QString deviceDescription(const lantern::DeviceInfo& device);
QString deviceTypeDescription(lantern::DeviceType type);

// The device memory a model needs (lantern/memory_plan.h), and a model too big for the device:
// Engine::load refuses it with ErrorCode::ModelTooLarge and the same words plan_memory gives
// beforehand (what the app's Context Length dialog shows), before anything is allocated, so the
// next load on the same device works.
//
// Expected bytes are worked out by hand from the documented layout: K and V per layer, every
// sequence (4 by default) at full context in 16-token blocks, 2-byte (f16) elements, each layer's
// cache rounded up to 256 bytes.
#include <QTest>

#include <cstdint>
#include <memory>
#include <string>

#include "lantern/device.h"
#include "lantern/engine.h"
#include "lantern/error.h"
#include "lantern/gguf.h"
#include "lantern/memory_plan.h"
#include "lantern/synthetic.h"
#include "lantern/tokenizer.h"
#include "model/llama_config.h"
#include "model/llama_model.h"
#include "model/memory_plan.h"
#include "model/weight_placement.h"
#include "test_support.h"

using namespace lantern;

namespace {

constexpr uint64_t kMiB = 1ull << 20;

// A stories-sized model (64 wide, KV heads 4 x head_dim 8: 32 K values a token and layer) whose
// GGUF claims a trained context of 2M tokens, so lengths past what lavapipe can hold are allowed
// by the model and refused only by the device. Written once per process.
std::string long_context_model(uint32_t layers) {
    SyntheticShape shape;
    shape.name = "long-context-" + std::to_string(layers);
    shape.n_layers = layers;
    shape.vocab = 512;
    shape.context_length = 1u << 21;
    const std::string path = test::temp_dir() + "/" + shape.name + ".gguf";
    write_synthetic_model(shape, static_cast<uint32_t>(GgmlType::F32), path, 5);
    return path;
}

// Lavapipe, chosen by name (it is present wherever the tests run): its limits (a 128 MiB
// storage-buffer range, a heap of a few GiB) are what the refusals are sized for.
constexpr const char* kLavapipe = "llvmpipe";

DeviceInfo lavapipe() {
    const auto devices = list_devices();
    return devices.at(choose_device(devices, kLavapipe));
}

EngineOptions with_context(uint32_t context) {
    EngineOptions o = test::validated_engine_options();
    o.context_length = context;
    o.pipeline_cache_dir = "-";
    return o;
}

QString refusal_of_load(const std::string& path, const EngineOptions& options, ErrorCode* code) {
    try {
        Engine::load(path, options);
    } catch (const Error& e) {
        *code = e.code();
        return QString::fromStdString(e.what());
    }
    return {};
}

}  // namespace

class MemoryPlanTest : public QObject {
    Q_OBJECT
private slots:
    void thePlanIsWhatTheLoadedEngineHolds() {
        const std::string path = test::shared_path("models/stories260K.gguf");
        auto engine = Engine::load(path, with_context(256));
        const MemoryPlan plan = plan_memory(engine->model(), engine->device(), with_context(256));
        QVERIFY2(plan.fits(), plan.refusal.c_str());
        QCOMPARE(plan.context_length, 256u);
        QCOMPARE(plan.sequences, 4u);
        QCOMPARE(plan.kv_blocks, 4u * 256 / 16);
        // One layer: 64 blocks x 16 tokens x 32 values x 2 bytes; K and V of 5 layers.
        QCOMPARE(plan.kv_layer_bytes, 64ull * 16 * 32 * 2);
        QCOMPARE(plan.kv_bytes, 2ull * 5 * 64 * 16 * 32 * 2);
        // The weights as the loaded engine holds them on the device; for a ModelInfo that does not
        // know them, the file's size.
        QVERIFY(engine->model().weight_bytes > 0);
        QCOMPARE(plan.weight_bytes, engine->model().weight_bytes);
        ModelInfo before_loading = engine->model();
        before_loading.weight_bytes = 0;
        QCOMPARE(plan_memory(before_loading, engine->device(), with_context(256)).weight_bytes,
                 engine->model().file_bytes);
        // The engine's own account of its pool: the same blocks, the same bytes (no rounding here:
        // 65536-byte layers are already whole 256-byte units).
        const KvStats stats = engine->kv_stats();
        QCOMPARE(stats.total_blocks, plan.kv_blocks);
        QCOMPARE(stats.capacity_bytes, plan.kv_bytes);
        QCOMPARE(engine->context_length(), plan.context_length);
        LANTERN_VERIFY_NO_VALIDATION();
    }

    void theWeightsArePlannedAsTheyArePlaced_data() {
        QTest::addColumn<uint32_t>("type");
        QTest::addColumn<bool>("gpuLayouts");
        QTest::addColumn<QString>(
            "architecture");  // llama; qwen2 (Q/K/V biases); qwen3 (Q/K norms, Q 2x wide)
        const std::pair<const char*, uint32_t> types[] = {{"F32", uint32_t(GgmlType::F32)},
                                                          {"F16", uint32_t(GgmlType::F16)},
                                                          {"BF16", uint32_t(GgmlType::BF16)},
                                                          {"Q8_0", uint32_t(GgmlType::Q8_0)},
                                                          {"Q4_0", uint32_t(GgmlType::Q4_0)},
                                                          {"Q4_K", uint32_t(GgmlType::Q4_K)},
                                                          {"Q4_1", uint32_t(GgmlType::Q4_1)},
                                                          {"Q5_0", uint32_t(GgmlType::Q5_0)},
                                                          {"Q5_1", uint32_t(GgmlType::Q5_1)},
                                                          {"Q3_K", uint32_t(GgmlType::Q3_K)},
                                                          {"Q5_K", uint32_t(GgmlType::Q5_K)},
                                                          {"Q6_K", uint32_t(GgmlType::Q6_K)},
                                                          {"IQ4_NL", uint32_t(GgmlType::IQ4_NL)},
                                                          {"IQ4_XS", uint32_t(GgmlType::IQ4_XS)},
                                                          {"Q4_K_M", kSyntheticQ4KM}};
        for (const auto& [name, type] : types) {
            QTest::newRow((std::string(name) + " tiled").c_str()) << type << false << QStringLiteral("llama");
            QTest::newRow((std::string(name) + " row-major").c_str())
                << type << true << QStringLiteral("llama");
        }
        for (const char* arch : {"qwen2", "qwen3"}) {
            QTest::addRow("%s Q4_K_M tiled", arch) << kSyntheticQ4KM << false << QString(arch);
            QTest::addRow("%s IQ4_XS tiled", arch) << uint32_t(GgmlType::IQ4_XS) << false << QString(arch);
            QTest::addRow("%s BF16 row-major", arch) << uint32_t(GgmlType::BF16) << true << QString(arch);
        }
    }

    // The load's fit check counts the weights as they will lie on the device, worked out from the
    // tensors' types before any is uploaded, and the count is exact: lavapipe's tiles (padded
    // short tiles, scale texels, slack) and a GPU's row-major layout, every type, and a Q4_K_M mix
    // whose Q/K/V and gate/up stacks split where the types change.
    void theWeightsArePlannedAsTheyArePlaced() {
        QFETCH(uint32_t, type);
        QFETCH(bool, gpuLayouts);
        QFETCH(QString, architecture);
        SyntheticShape shape = synthetic_shape("256/8/4/2/768/320");  // whole K-quant blocks, odd tiles
        shape.architecture = architecture.toStdString();
        shape.qkv_bias = shape.architecture == "qwen2";
        shape.qk_norm = shape.architecture == "qwen3";
        if (shape.qk_norm) shape.head_dim = 128;  // Q 512 wide on a width of 256
        shape.name = "plan-" + shape.architecture + "-" + std::to_string(type);
        const std::string path = test::temp_dir() + "/" + shape.name + ".gguf";
        write_synthetic_model(shape, type, path, 3);
        auto gguf = GgufFile::open(path);
        const ModelInfo info = model::read_llama_config(*gguf);
        EngineOptions options = with_context(256);
        EngineTestHooks hooks;
        hooks.gpu_layouts = gpuLayouts;
        vk::Context& ctx = test::context();
        const uint64_t before = ctx.bytes_allocated();
        {
            model::LlamaModel llama(ctx, *gguf, info, model::limits_for(info, options, hooks));
            QVERIFY(llama.weight_bytes() > 0);
            QCOMPARE(llama.planned_weight_bytes(), llama.weight_bytes());
            // K-quants grow on the device: the file's size would have planned too little.
            if (type == uint32_t(GgmlType::Q4_K) || type == kSyntheticQ4KM)
                QVERIFY2(llama.weight_bytes() > info.file_bytes * 5 / 4,
                         qPrintable(QStringLiteral("%1 on the device, %2 in the file")
                                        .arg(llama.weight_bytes())
                                        .arg(info.file_bytes)));
            // The slabs hold the weights and little more: the last is sized to what was left to
            // place (it used to be a whole 256 MiB slab for any model).
            const uint64_t allocated = ctx.bytes_allocated() - before;
            const uint64_t others = llama.kv_bytes() + (8u << 20);  // KV cache, activations, logits, tables
            QVERIFY2(allocated < llama.weight_bytes() + llama.weight_bytes() / 32 + others,
                     qPrintable(QStringLiteral("%1 bytes allocated for %2 of weights")
                                    .arg(allocated)
                                    .arg(llama.weight_bytes())));
        }
        QCOMPARE(ctx.bytes_allocated(), before);
        LANTERN_VERIFY_NO_VALIDATION();
    }

    // The placement rules on made-up pieces: two layers of 100 + 50 bytes, 16-byte alignment.
    void weightPiecesGoInSlabsSizedToWhatTheyHold() {
        using model::WeightPiece;
        using model::WeightPlacement;
        const std::vector<WeightPiece> two_layers{{100, 0}, {50, 0}, {100, 1}, {50, 1}};
        // Slabs of 300: layer 1 would end at 338 after layer 0's 162 bytes. Kept whole, it starts
        // the next slab, and each slab is as big as what it holds, no tail.
        const WeightPlacement kept(two_layers, 300, 0, 16, true);
        QCOMPARE(kept.slab_sizes(), (std::vector<uint64_t>{162, 162}));
        QCOMPARE(kept.spot(2).slab, 1u);
        QCOMPARE(kept.spot(2).offset, 0u);
        QCOMPARE(kept.spot(3).offset, 112u);
        QCOMPARE(kept.split_layers(), 0u);
        // Not kept whole (GPUs: no fused layers), its first matrix fills the first slab.
        const WeightPlacement loose(two_layers, 300, 0, 16, false);
        QCOMPARE(loose.slab_sizes(), (std::vector<uint64_t>{276, 50}));
        QCOMPARE(loose.split_layers(), 1u);
        QCOMPARE(loose.slab_bytes(), 326u);
        QCOMPARE(loose.piece_bytes(), 300u);
        // A layer larger than a slab goes piece by piece; a piece larger than a slab has one of its
        // own size; a piece past the device's largest allocation is refused before any upload.
        const WeightPlacement big({{10, -1}, {400, 0}, {20, 0}}, 300, 0, 16, true);
        QCOMPARE(big.slab_sizes(), (std::vector<uint64_t>{10, 400, 20}));
        QVERIFY_THROWS_EXCEPTION(Error, WeightPlacement({{10, -1}, {400, 0}}, 300, 350, 16, true));
        try {
            WeightPlacement({{400u << 20, 0}}, 256u << 20, 300u << 20, 16, true);
            QFAIL("a 400 MiB piece was placed on a device whose allocations reach 300 MiB");
        } catch (const Error& e) {
            QCOMPARE(e.code(), ErrorCode::ModelTooLarge);
            QVERIFY2(std::string(e.what()).find(
                         "400 MiB exceeds the device's largest allocation (300 MiB)") != std::string::npos,
                     e.what());
        }
    }

    // On lavapipe, where decode runs whole layers per dispatch, each layer stays in one slab and
    // the slabs end where their last layer does: what the plan counts is what is allocated, with
    // slabs far smaller than a model (a layer and a half here), and the model computes what it
    // computes in one slab.
    void layersStayWholeInSlabsThatEndWhereTheyDo() {
        SyntheticShape shape = synthetic_shape("256/6/4/2/768/320");
        shape.name = "slabs";
        const std::string path = test::temp_dir() + "/slabs.gguf";
        write_synthetic_model(shape, uint32_t(GgmlType::Q8_0), path, 5);
        auto gguf = GgufFile::open(path);
        const ModelInfo info = model::read_llama_config(*gguf);
        vk::Context& ctx = test::context();
        EngineOptions whole = with_context(256);
        EngineOptions small = whole;
        uint64_t layer_bytes = 0;
        {
            model::LlamaModel one(ctx, *gguf, info, model::limits_for(info, whole));
            const auto& p = one.weight_placement();
            for (size_t i = 0; i < p.pieces(); ++i)
                layer_bytes += p.piece(i).layer == 0 ? p.piece(i).bytes : 0;
        }
        QVERIFY(layer_bytes > 0);
        small.weight_slab_bytes = layer_bytes * 3 / 2;
        const uint64_t before = ctx.bytes_allocated();
        {
            model::LlamaModel llama(ctx, *gguf, info, model::limits_for(info, small));
            const auto& p = llama.weight_placement();
            QVERIFY2(p.slab_sizes().size() >= 6, "the slabs are not smaller than the model");
            QCOMPARE(p.split_layers(), 0u);
            // No tails: at most the pieces' alignment padding on top of what they hold.
            QVERIFY(p.slab_bytes() <= p.piece_bytes() + 256 * p.pieces());
            QCOMPARE(llama.weight_bytes(), p.slab_bytes());
            QCOMPARE(llama.planned_weight_bytes(), p.slab_bytes());
            uint64_t slabs_allocated = 0;
            for (uint64_t size : p.slab_sizes()) slabs_allocated += size;
            QVERIFY(ctx.bytes_allocated() - before >= slabs_allocated);
        }
        QCOMPARE(ctx.bytes_allocated(), before);
        // The same logits from the small slabs as from one (fused decode steps included).
        std::vector<std::vector<float>> logits;
        for (const EngineOptions& o : {whole, small}) {
            auto engine = Engine::load(path, o);
            const SequenceId seq = engine->create_sequence();
            std::vector<float> last = engine->prefill(seq, std::vector<int32_t>{1, 5, 9, 14});
            for (int t = 0; t < 3; ++t) {
                StepItem item{seq, {int32_t(20 + t)}, true, false};
                last = engine->step(std::span(&item, 1))[0];
            }
            QVERIFY(engine->last_step_profile().fused_layers || !ops::DecodeLayerOp::device_supported(ctx));
            logits.push_back(last);
        }
        QCOMPARE(logits[1], logits[0]);
        LANTERN_VERIFY_NO_VALIDATION();
    }

    void theContextIsTheModelsWhenNoneIsAskedAndNeverLonger() {
        const std::string path = test::shared_path("models/stories260K.gguf");
        auto engine = Engine::load(path, with_context(0));
        const DeviceInfo& device = engine->device();
        QCOMPARE(engine->model().context_length, 512u);  // stories260K's trained context
        QCOMPARE(plan_memory(engine->model(), device, with_context(0)).context_length, 512u);
        QCOMPARE(plan_memory(engine->model(), device, with_context(100000)).context_length, 512u);
        // Past 4096 tokens of trained context, the default stops at 4096.
        ModelInfo longer = engine->model();
        longer.context_length = 131072;
        QCOMPARE(plan_memory(longer, device, with_context(0)).context_length, 4096u);
        QCOMPARE(plan_memory(longer, device, with_context(32768)).context_length, 32768u);
        // A budget instead of a sequence count: 10 blocks' worth of bytes, 640 bytes a token.
        EngineOptions budget = with_context(256);
        budget.kv_budget_bytes = 10ull * 16 * 640;
        QCOMPARE(plan_memory(engine->model(), device, budget).kv_blocks, 10u);
        budget.kv_budget_bytes = 100;
        QVERIFY_THROWS_EXCEPTION(Error, plan_memory(engine->model(), device, budget));
        // Tokens before bytes (rounded up to whole blocks), then conversations at full length,
        // then one per sequence.
        budget.kv_tokens = 33;
        QCOMPARE(plan_memory(engine->model(), device, budget).kv_blocks, 3u);
        EngineOptions shared = with_context(256);
        shared.max_sequences = 4;
        QCOMPARE(plan_memory(engine->model(), device, shared).kv_blocks, 4u * 16);
        shared.kv_sequences = 2;  // four sequences sharing room for two at full length
        const MemoryPlan two = plan_memory(engine->model(), device, shared);
        QCOMPARE(two.kv_blocks, 2u * 16);
        QCOMPARE(two.sequences, 2u);
    }

    void aModelPastTheDevicesMemoryIsRefusedWithItsFigures() {
        // Llama 2 7B's shape from a 6.6 GiB Q6_K-sized file, on an 8 GiB card.
        const ModelInfo m = test::llama2_7b_shape(6800 * kMiB);
        DeviceInfo card;
        card.name = "Test GPU";
        card.device_local_bytes = 8192 * kMiB;
        card.max_storage_buffer_range = 4096 * kMiB;
        // 4096 tokens x 4 sequences x 4096 values x 2 bytes = 128 MiB a layer's K; 64 of them.
        const MemoryPlan full = plan_memory(m, card, with_context(4096));
        QCOMPARE(full.kv_layer_bytes, 128 * kMiB);
        QCOMPARE(full.kv_bytes, 8192 * kMiB);
        QVERIFY(!full.fits());
        const QString why = QString::fromStdString(full.refusal);
        QVERIFY2(why.contains(QStringLiteral("weights 6800 MiB + KV cache 8192 MiB for 4096 tokens")),
                 qPrintable(why));
        QVERIFY2(why.contains(QStringLiteral("Test GPU has 8192 MiB")), qPrintable(why));
        // A quarter of it is still too much with the weights (and the largest step's 42 MiB of
        // work); an eighth, 1024 MiB of KV cache, fits.
        QVERIFY(!plan_memory(m, card, with_context(1024)).fits());
        const MemoryPlan eighth = plan_memory(m, card, with_context(512));
        QCOMPARE(eighth.kv_bytes, 1024 * kMiB);
        QVERIFY2(eighth.fits(), eighth.refusal.c_str());
        QVERIFY(eighth.total_bytes() < card.device_local_bytes);
    }

    void aContextPastOneBuffersReachIsRefusedBeforeAnythingIsAllocated() {
        const std::string path = long_context_model(5);
        const DeviceInfo device = lavapipe();
        QCOMPARE(device.max_storage_buffer_range, 128 * kMiB);
        // 2M tokens x 4 sequences x 32 values x 2 bytes = 512 MiB for one layer's K.
        EngineOptions options = with_context(1u << 21);
        options.device_selector = kLavapipe;
        ErrorCode code = ErrorCode::Internal;
        const QString why = refusal_of_load(path, options, &code);
        QCOMPARE(code, ErrorCode::ModelTooLarge);
        QVERIFY2(why.contains(QStringLiteral("KV cache of one layer (512 MiB")), qPrintable(why));
        QVERIFY2(why.contains(QStringLiteral("lower the context")), qPrintable(why));
        // The plan said so first, in the same words.
        ModelInfo info;
        {
            EngineOptions fits = with_context(4096);
            fits.device_selector = kLavapipe;
            auto small = Engine::load(path, fits);
            info = small->model();
            QCOMPARE(small->context_length(), 4096u);
        }
        QCOMPARE(QString::fromStdString(plan_memory(info, device, with_context(1u << 21)).refusal), why);
        LANTERN_VERIFY_NO_VALIDATION();
    }

    void aKvCachePastTheDevicesMemoryIsRefusedAndTheNextLoadWorks() {
        // On lavapipe: 524288 tokens x 4 sequences x
        // 32 values x 2 bytes make each layer's K exactly its 128 MiB storage-buffer range, and enough
        // layers make the caches together outgrow its heap whatever size the heap has here.
        EngineOptions options = with_context(1u << 19);
        options.device_selector = kLavapipe;
        const DeviceInfo device = lavapipe();
        QCOMPARE(device.max_storage_buffer_range, 128 * kMiB);
        const uint32_t layers = static_cast<uint32_t>(device.device_local_bytes / (2 * 128 * kMiB)) + 1;
        const std::string path = long_context_model(layers);
        ErrorCode code = ErrorCode::Internal;
        const QString why = refusal_of_load(path, options, &code);
        QCOMPARE(code, ErrorCode::ModelTooLarge);
        const QString kv = QStringLiteral("KV cache %1 MiB for 524288 tokens").arg(2 * 128 * layers);
        QVERIFY2(why.contains(kv), qPrintable(why));
        QVERIFY2(why.contains(QStringLiteral("has %1 MiB").arg(device.device_local_bytes / kMiB)),
                 qPrintable(why));
        // Nothing was left allocated: the same device loads the model at a length that fits.
        options.context_length = 8192;
        auto engine = Engine::load(path, options);
        QCOMPARE(engine->context_length(), 8192u);
        const SequenceId seq = engine->create_sequence();
        QCOMPARE(engine->prefill(seq, engine->tokenizer().encode("hello", true)).size(), size_t(512));
        LANTERN_VERIFY_NO_VALIDATION();
    }
};

QTEST_APPLESS_MAIN(MemoryPlanTest)
#include "test_memory_plan.moc"

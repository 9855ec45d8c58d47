// File > Context Length…: the dialog says what the length being picked costs in device memory and
// refuses, before anything is reloaded, a length the device cannot hold — in the user's words,
// naming the limit. The model and device are made up (a Llama 2 7B-shaped Q4_K_M file on an 8 GiB
// card) so the figures are worked out by hand: 32 layers x K and V x 4096 values x 2 bytes = 512
// KiB a token, for each of the 2 conversations at full length the app's KV cache has room for
// with its API server on (InferenceWorker::kvConversationsFor); the largest step's work adds 42 MiB.
#include <QCheckBox>
#include <QDialogButtonBox>
#include <QLabel>
#include <QPushButton>
#include <QSpinBox>
#include <QTest>

#include "ContextLengthDialog.h"
#include "Language.h"
#include "test_support.h"
#include "worker/InferenceWorker.h"

namespace {

constexpr uint64_t kMiB = 1ull << 20;
const uint32_t kWithApi = InferenceWorker::kvConversationsFor(true);

lantern::ModelInfo llama2_7b() {
    return lantern::test::llama2_7b_shape(3891 * kMiB);
}  // Q4_K_M

lantern::DeviceInfo card(uint64_t memory, uint64_t bufferRange = 4096 * kMiB) {
    lantern::DeviceInfo d;
    d.name = "Test GPU";
    d.device_local_bytes = memory;
    d.max_storage_buffer_range = bufferRange;
    return d;
}

struct Dialog {
    ContextLengthDialog* dialog;
    QCheckBox* automatic;
    QSpinBox* length;
    QLabel* memory;
    QLabel* warning;
    QPushButton* ok;
};

Dialog parts(ContextLengthDialog& d) {
    return {&d,
            d.findChild<QCheckBox*>(QStringLiteral("automaticContext")),
            d.findChild<QSpinBox*>(QStringLiteral("contextLength")),
            d.findChild<QLabel*>(QStringLiteral("contextMemory")),
            d.findChild<QLabel*>(QStringLiteral("contextWarning")),
            d.findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Ok)};
}

}  // namespace

class TestContextLengthDialog : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        // The English plural forms ("2 conversations"), as the app installs them.
        QVERIFY(language::install(QStringLiteral("en")) != nullptr);
    }

    void aLengthThatDoesNotFitTheDeviceCannotBeChosen() {
        ContextLengthDialog d(llama2_7b(), card(6144 * kMiB), 0, kWithApi, 0);
        d.show();
        const Dialog ui = parts(d);
        QVERIFY(ui.automatic && ui.length && ui.memory && ui.warning && ui.ok);
        // Automatic: the model's 4096 tokens, 4 GiB of KV cache for 2 of them, next to 3.8 GiB of weights.
        QVERIFY(ui.automatic->isChecked());
        QVERIFY(!ui.length->isEnabled());
        QCOMPARE(ui.length->value(), 4096);
        QCOMPARE(d.chosenLength(), 0u);
        QVERIFY2(ui.memory->text().contains(
                     QStringLiteral("KV cache: 4.00 GiB, room for 2 conversations of 4,096 tokens "
                                    "at once: the chat's, and what the local API server's replies share.")),
                 qPrintable(ui.memory->text()));
        QVERIFY(ui.warning->isVisibleTo(&d));
        QVERIFY2(ui.warning->text().startsWith(
                     QStringLiteral("Too much for Test GPU: about 7.84 GiB are needed and it has 6.00 GiB.")),
                 qPrintable(ui.warning->text()));
        QVERIFY(!ui.ok->isEnabled());

        // Half the context: 2 GiB of KV cache, 5.84 GiB in all, fits.
        ui.automatic->setChecked(false);
        QVERIFY(ui.length->isEnabled());
        ui.length->setValue(2048);
        QCOMPARE(d.chosenLength(), 2048u);
        QCOMPARE(d.plan().kv_bytes, 2048 * kMiB);
        QVERIFY2(ui.memory->text().contains(
                     QStringLiteral("KV cache: 2.00 GiB, room for 2 conversations of 2,048 tokens")),
                 qPrintable(ui.memory->text()));
        QVERIFY2(ui.memory->text().contains(QStringLiteral("about 5.84 GiB")) &&
                     ui.memory->text().contains(QStringLiteral("of the 6.00 GiB on Test GPU")),
                 qPrintable(ui.memory->text()));
        QVERIFY(!ui.warning->isVisibleTo(&d));
        QVERIFY(ui.ok->isEnabled());
    }

    // With the API server off the cache holds the chat alone: half the memory, and the model's
    // whole context fits the same card.
    void theChatAloneTakesHalfTheMemory() {
        ContextLengthDialog d(llama2_7b(), card(6144 * kMiB), 0, InferenceWorker::kvConversationsFor(false),
                              0);
        const Dialog ui = parts(d);
        QCOMPARE(d.plan().sequences, 1u);
        QCOMPARE(d.plan().kv_bytes, 2048 * kMiB);
        QVERIFY2(
            ui.memory->text().startsWith(QStringLiteral("KV cache: 2.00 GiB for the chat's 4,096 tokens")),
            qPrintable(ui.memory->text()));
        QVERIFY(ui.ok->isEnabled());
    }

    void aLayerPastOneBuffersReachIsNamedAsTheLimit() {
        // 4096 tokens x 2 x 4096 values x 2 bytes = 64 MiB for one layer's K; this card's views reach 32 MiB.
        ContextLengthDialog d(llama2_7b(), card(80 * 1024 * kMiB, 32 * kMiB), 4096, kWithApi, 0);
        const Dialog ui = parts(d);
        QVERIFY(!ui.automatic->isChecked());
        QCOMPARE(d.plan().limit, lantern::MemoryLimit::BufferRange);
        QVERIFY2(ui.warning->text().contains(QStringLiteral(
                     "one layer's KV cache would take 64.0 MiB, and one buffer on it reaches 32.0 MiB")),
                 qPrintable(ui.warning->text()));
        QVERIFY(!ui.ok->isEnabled());
        ui.length->setValue(2048);
        QCOMPARE(d.plan().limit, lantern::MemoryLimit::None);
        QVERIFY(ui.ok->isEnabled());
    }

    void theLengthStaysWithinWhatTheModelWasTrainedOn() {
        ContextLengthDialog d(llama2_7b(), card(80 * 1024 * kMiB), 100000, kWithApi, 0);
        const Dialog ui = parts(d);
        QCOMPARE(ui.length->maximum(), 4096);
        QCOMPARE(ui.length->minimum(), 256);
        QCOMPARE(d.chosenLength(), 4096u);
        // A model trained on fewer tokens than the usual minimum offers its own length and no more.
        lantern::ModelInfo small = llama2_7b();
        small.context_length = 128;
        ContextLengthDialog tiny(small, card(80 * 1024 * kMiB), 0, kWithApi, 0);
        QCOMPARE(parts(tiny).length->minimum(), 128);
        QCOMPARE(parts(tiny).length->maximum(), 128);
    }

    void aShorterContextThanTheConversationSaysItsStartNoLongerFits() {
        ContextLengthDialog d(llama2_7b(), card(80 * 1024 * kMiB), 0, kWithApi, 3000);
        const Dialog ui = parts(d);
        QVERIFY(!ui.warning->isVisibleTo(&d));  // 4096 holds it
        ui.automatic->setChecked(false);
        ui.length->setValue(2048);
        QVERIFY(ui.warning->isVisibleTo(&d));
        QVERIFY2(
            ui.warning->text().startsWith(QStringLiteral("This conversation is already 3,000 tokens long: "
                                                         "with 2,048, its oldest turns no longer fit")),
            qPrintable(ui.warning->text()));
        QVERIFY(ui.ok->isEnabled());  // a warning, not a refusal
    }
};

QTEST_MAIN(TestContextLengthDialog)
#include "test_context_length_dialog.moc"

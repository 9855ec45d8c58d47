// File > Context Length…: the dialog says what the length being picked costs in device memory and
// refuses, before anything is reloaded, a length the device cannot hold — in the user's words,
// naming the limit. The model and device are made up (a Llama 2 7B-shaped Q4_K_M file on an 8 GiB
// card) so the figures are worked out by hand: 32 layers x K and V x 4096 values x 2 bytes = 512
// KiB a token, for each of 4 conversations at full length; the largest step's work adds 42 MiB.
#include <QCheckBox>
#include <QDialogButtonBox>
#include <QLabel>
#include <QPushButton>
#include <QSpinBox>
#include <QTest>

#include "ContextLengthDialog.h"
#include "Language.h"
#include "test_support.h"

namespace {

constexpr uint64_t kMiB = 1ull << 20;

lantern::ModelInfo llama2_7b() { return lantern::test::llama2_7b_shape(3891 * kMiB); }  // Q4_K_M

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
    return {&d, d.findChild<QCheckBox*>(QStringLiteral("automaticContext")),
            d.findChild<QSpinBox*>(QStringLiteral("contextLength")), d.findChild<QLabel*>(QStringLiteral("contextMemory")),
            d.findChild<QLabel*>(QStringLiteral("contextWarning")),
            d.findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Ok)};
}

}  // namespace

class TestContextLengthDialog : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        // The English plural forms ("4 conversations"), as the app installs them.
        QVERIFY(language::install(QStringLiteral("en")) != nullptr);
    }

    void aLengthThatDoesNotFitTheDeviceCannotBeChosen() {
        ContextLengthDialog d(llama2_7b(), card(8192 * kMiB), 0, 4, 0);
        d.show();
        const Dialog ui = parts(d);
        QVERIFY(ui.automatic && ui.length && ui.memory && ui.warning && ui.ok);
        // Automatic: the model's 4096 tokens, 8 GiB of KV cache for 4 of them, next to 3.8 GiB of weights.
        QVERIFY(ui.automatic->isChecked());
        QVERIFY(!ui.length->isEnabled());
        QCOMPARE(ui.length->value(), 4096);
        QCOMPARE(d.chosenLength(), 0u);
        QVERIFY2(ui.memory->text().contains(QStringLiteral("KV cache: 8.00 GiB, room for 4 conversations of 4,096 tokens")),
                 qPrintable(ui.memory->text()));
        QVERIFY(ui.warning->isVisibleTo(&d));
        QVERIFY2(ui.warning->text().startsWith(QStringLiteral("Too much for Test GPU: about 11.8 GiB are needed and it has 8.00 GiB.")),
                 qPrintable(ui.warning->text()));
        QVERIFY(!ui.ok->isEnabled());

        // Half the context: 4 GiB of KV cache, 7.8 GiB in all, fits.
        ui.automatic->setChecked(false);
        QVERIFY(ui.length->isEnabled());
        ui.length->setValue(2048);
        QCOMPARE(d.chosenLength(), 2048u);
        QCOMPARE(d.plan().kv_bytes, 4096 * kMiB);
        QVERIFY2(ui.memory->text().contains(QStringLiteral("KV cache: 4.00 GiB, room for 4 conversations of 2,048 tokens")),
                 qPrintable(ui.memory->text()));
        QVERIFY2(ui.memory->text().contains(QStringLiteral("about 7.8")) && ui.memory->text().contains(QStringLiteral("of the 8.00 GiB on Test GPU")),
                 qPrintable(ui.memory->text()));
        QVERIFY(!ui.warning->isVisibleTo(&d));
        QVERIFY(ui.ok->isEnabled());
    }

    // With the API server off the cache holds the chat alone: a quarter of the memory, and the
    // model's whole context fits the same card.
    void theChatAloneTakesAQuarterOfTheMemory() {
        ContextLengthDialog d(llama2_7b(), card(8192 * kMiB), 0, 1, 0);
        const Dialog ui = parts(d);
        QCOMPARE(d.plan().sequences, 1u);
        QCOMPARE(d.plan().kv_bytes, 2048 * kMiB);
        QVERIFY2(ui.memory->text().startsWith(QStringLiteral("KV cache: 2.00 GiB for the chat's 4,096 tokens")),
                 qPrintable(ui.memory->text()));
        QVERIFY(ui.ok->isEnabled());
    }

    void aLayerPastOneBuffersReachIsNamedAsTheLimit() {
        // 4096 tokens x 4 x 4096 values x 2 bytes = 128 MiB for one layer's K; this card's views reach 64 MiB.
        ContextLengthDialog d(llama2_7b(), card(80 * 1024 * kMiB, 64 * kMiB), 4096, 4, 0);
        const Dialog ui = parts(d);
        QVERIFY(!ui.automatic->isChecked());
        QCOMPARE(d.plan().limit, lantern::MemoryLimit::BufferRange);
        QVERIFY2(ui.warning->text().contains(QStringLiteral("one layer's KV cache would take 128.0 MiB, and one buffer on it reaches 64.0 MiB")),
                 qPrintable(ui.warning->text()));
        QVERIFY(!ui.ok->isEnabled());
        ui.length->setValue(2048);
        QCOMPARE(d.plan().limit, lantern::MemoryLimit::None);
        QVERIFY(ui.ok->isEnabled());
    }

    void theLengthStaysWithinWhatTheModelWasTrainedOn() {
        ContextLengthDialog d(llama2_7b(), card(80 * 1024 * kMiB), 100000, 4, 0);
        const Dialog ui = parts(d);
        QCOMPARE(ui.length->maximum(), 4096);
        QCOMPARE(ui.length->minimum(), 256);
        QCOMPARE(d.chosenLength(), 4096u);
        // A model trained on fewer tokens than the usual minimum offers its own length and no more.
        lantern::ModelInfo small = llama2_7b();
        small.context_length = 128;
        ContextLengthDialog tiny(small, card(80 * 1024 * kMiB), 0, 4, 0);
        QCOMPARE(parts(tiny).length->minimum(), 128);
        QCOMPARE(parts(tiny).length->maximum(), 128);
    }

    void aShorterContextThanTheConversationSaysItsStartNoLongerFits() {
        ContextLengthDialog d(llama2_7b(), card(80 * 1024 * kMiB), 0, 4, 3000);
        const Dialog ui = parts(d);
        QVERIFY(!ui.warning->isVisibleTo(&d));  // 4096 holds it
        ui.automatic->setChecked(false);
        ui.length->setValue(2048);
        QVERIFY(ui.warning->isVisibleTo(&d));
        QVERIFY2(ui.warning->text().startsWith(QStringLiteral("This conversation is already 3,000 tokens long: with 2,048, its oldest turns no longer fit")),
                 qPrintable(ui.warning->text()));
        QVERIFY(ui.ok->isEnabled());  // a warning, not a refusal
    }
};

QTEST_MAIN(TestContextLengthDialog)
#include "test_context_length_dialog.moc"

#include "panels/SamplingPanel.h"
#include "panels/ScrollablePanel.h"

#include <QCheckBox>
#include <QDoubleSpinBox>
#include <QEvent>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QRegularExpressionValidator>
#include <QScrollArea>
#include <QSlider>
#include <QSpinBox>
#include <QVBoxLayout>
#include <cmath>

#include "panels/CandidateBars.h"

namespace {

QDoubleSpinBox* makeDouble(QWidget* parent, const char* name, double min, double max, double step,
                           int decimals) {
    auto* box = new QDoubleSpinBox(parent);
    box->setObjectName(QString::fromLatin1(name));
    box->setRange(min, max);
    box->setSingleStep(step);
    box->setDecimals(decimals);
    box->setKeyboardTracking(false);
    box->setAccelerated(true);
    return box;
}

QSpinBox* makeInt(QWidget* parent, const char* name, int min, int max) {
    auto* box = new QSpinBox(parent);
    box->setObjectName(QString::fromLatin1(name));
    box->setRange(min, max);
    box->setKeyboardTracking(false);
    box->setAccelerated(true);
    return box;
}

QLabel* sectionLabel(const QString& text, QWidget* parent) {
    auto* label = new QLabel(text, parent);
    label->setProperty("role", QStringLiteral("section"));
    return label;
}

}  // namespace

SamplingPanel::SamplingPanel(QWidget* parent) : QWidget(parent) {
    QWidget* content = makeScrollableContent(this);

    auto* layout = new QVBoxLayout(content);
    layout->setContentsMargins(10, 4, 10, 10);

    remoteNote_ = new QLabel(content);
    remoteNote_->setObjectName(QStringLiteral("remoteSamplingNote"));
    remoteNote_->setWordWrap(true);
    remoteNote_->setProperty("role", QStringLiteral("caption"));
    remoteNote_->hide();
    layout->addWidget(remoteNote_);

    QLabel* randomnessLabel = sectionLabel(QString(), content);
    layout->addWidget(randomnessLabel);
    texts_([randomnessLabel] { randomnessLabel->setText(tr("Randomness")); });
    auto* form = new QFormLayout();
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    layout->addLayout(form);

    temperatureSlider_ = new QSlider(Qt::Horizontal, content);
    temperatureSlider_->setObjectName(QStringLiteral("temperatureSlider"));
    temperatureSlider_->setRange(0, 200);
    temperature_ = makeDouble(content, "temperature", 0.0, 5.0, 0.05, 2);
    texts_([this] {
        temperature_->setToolTip(
            tr("0 = always the most likely token (greedy). Higher = more surprising text."));
    });
    auto* tempRow = new QHBoxLayout();
    tempRow->addWidget(temperatureSlider_, 1);
    tempRow->addWidget(temperature_);
    texts_([caption = captionedRow(form, tempRow)] { caption->setText(tr("Temperature")); });

    topK_ = makeInt(content, "topK", 0, 100000);
    texts_([this] { topK_->setSpecialValueText(tr("off")); });
    texts_([this] { topK_->setToolTip(tr("Keep only the k most likely tokens (0 = off).")); });
    texts_([caption = captionedRow(form, topK_)] { caption->setText(tr("Top-k")); });

    topP_ = makeDouble(content, "topP", 0.0, 1.0, 0.01, 2);
    texts_([this] {
        topP_->setToolTip(tr("Keep the most likely tokens that together reach this probability (1 = off)."));
    });
    texts_([caption = captionedRow(form, topP_)] { caption->setText(tr("Top-p")); });

    minP_ = makeDouble(content, "minP", 0.0, 1.0, 0.01, 2);
    texts_([this] {
        minP_->setToolTip(tr("Drop tokens less likely than this fraction of the best one (0 = off)."));
    });
    texts_([caption = captionedRow(form, minP_)] { caption->setText(tr("Min-p")); });

    QLabel* repetitionLabel = sectionLabel(QString(), content);
    layout->addWidget(repetitionLabel);
    texts_([repetitionLabel] { repetitionLabel->setText(tr("Repetition")); });
    auto* penalties = new QFormLayout();
    penalties->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    layout->addLayout(penalties);
    repeatPenalty_ = makeDouble(content, "repeatPenalty", 0.05, 5.0, 0.05, 2);
    texts_(
        [this] { repeatPenalty_->setToolTip(tr("Divides the scores of recently used tokens (1 = off).")); });
    texts_([caption = captionedRow(penalties, repeatPenalty_)] { caption->setText(tr("Repeat penalty")); });
    presencePenalty_ = makeDouble(content, "presencePenalty", -2.0, 2.0, 0.1, 2);
    texts_([this] {
        presencePenalty_->setToolTip(tr("Subtracted once from every token already used (0 = off)."));
    });
    texts_(
        [caption = captionedRow(penalties, presencePenalty_)] { caption->setText(tr("Presence penalty")); });
    frequencyPenalty_ = makeDouble(content, "frequencyPenalty", -2.0, 2.0, 0.1, 2);
    texts_([this] {
        frequencyPenalty_->setToolTip(tr("Subtracted for every time a token was used (0 = off)."));
    });
    texts_([caption = captionedRow(penalties, frequencyPenalty_)] {
        caption->setText(tr("Frequency penalty"));
    });
    penaltyWindow_ = makeInt(content, "penaltyWindow", -1, 1 << 20);
    texts_([this] { penaltyWindow_->setSpecialValueText(tr("whole text")); });
    texts_([this] { penaltyWindow_->setSuffix(tr(" tokens")); });
    texts_([this] { penaltyWindow_->setToolTip(tr("How many recent tokens the penalties look at.")); });
    texts_([caption = captionedRow(penalties, penaltyWindow_)] { caption->setText(tr("Penalty window")); });

    QLabel* lengthAndLabel = sectionLabel(QString(), content);
    layout->addWidget(lengthAndLabel);
    texts_([lengthAndLabel] { lengthAndLabel->setText(tr("Length and seed")); });
    auto* rest = new QFormLayout();
    rest->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    layout->addLayout(rest);
    maxTokens_ = makeInt(content, "maxTokens", 0, 1 << 20);
    texts_([this] { maxTokens_->setSpecialValueText(tr("no limit")); });
    texts_([this] {
        maxTokens_->setToolTip(
            tr("The reply ends after this many tokens (0 = only the context length limits it)."));
    });
    texts_([caption = captionedRow(rest, maxTokens_)] { caption->setText(tr("Max tokens")); });

    fixedSeed_ = new QCheckBox(content);
    texts_([this] { fixedSeed_->setText(tr("Fixed")); });
    fixedSeed_->setObjectName(QStringLiteral("fixedSeed"));
    seed_ = new QLineEdit(content);
    seed_->setObjectName(QStringLiteral("seed"));
    seed_->setValidator(
        new QRegularExpressionValidator(QRegularExpression(QStringLiteral("\\d{1,20}")), seed_));
    texts_([this] { seed_->setPlaceholderText(tr("random each reply")); });
    seed_->setEnabled(false);
    auto* seedRow = new QHBoxLayout();
    seedRow->addWidget(fixedSeed_);
    seedRow->addWidget(seed_, 1);
    texts_([caption = captionedRow(rest, seedRow)] { caption->setText(tr("Seed")); });

    seedUsedLabel_ = new QLabel(QStringLiteral("—"), content);
    seedUsedLabel_->setObjectName(QStringLiteral("seedUsed"));
    seedUsedLabel_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    keepSeed_ = new QPushButton(content);
    texts_([this] { keepSeed_->setText(tr("Keep")); });
    keepSeed_->setObjectName(QStringLiteral("keepSeed"));
    texts_([this] {
        keepSeed_->setToolTip(tr("Fix the seed to the one the last reply used, to reproduce it."));
    });
    keepSeed_->setEnabled(false);
    auto* usedRow = new QHBoxLayout();
    usedRow->addWidget(seedUsedLabel_, 1);
    usedRow->addWidget(keepSeed_);
    texts_([caption = captionedRow(rest, usedRow)] { caption->setText(tr("Last seed used")); });

    stopStrings_ = new QPlainTextEdit(content);
    stopStrings_->setObjectName(QStringLiteral("stopStrings"));
    texts_([this] { stopStrings_->setPlaceholderText(tr("One per line; \\n is a newline")); });
    stopStrings_->setTabChangesFocus(true);
    stopStrings_->setFixedHeight(QFontMetrics(stopStrings_->font()).lineSpacing() * 3 + 12);
    texts_([caption = captionedRow(rest, stopStrings_)] { caption->setText(tr("Stop strings")); });

    auto* reset = new QPushButton(content);
    texts_([reset] { reset->setText(tr("Reset to Defaults")); });
    reset->setObjectName(QStringLiteral("resetDefaults"));
    layout->addWidget(reset, 0, Qt::AlignRight);

    QLabel* lastTokenLabel = sectionLabel(QString(), content);
    layout->addWidget(lastTokenLabel);
    texts_([lastTokenLabel] { lastTokenLabel->setText(tr("Last token's candidates")); });
    candidates_ = new CandidateBars(content);
    layout->addWidget(candidates_);
    candidatesNote_ = new QLabel(content);
    texts_([this] {
        candidatesNote_->setText(tr("A remote server does not send the candidates it drew from."));
    });
    candidatesNote_->setWordWrap(true);
    candidatesNote_->setProperty("role", QStringLiteral("caption"));
    candidatesNote_->hide();
    layout->addWidget(candidatesNote_);
    layout->addStretch(1);

    // Wiring: every edit produces one settingsChanged with the whole settings.
    connect(temperatureSlider_, &QSlider::valueChanged, this, [this](int v) {
        if (updating_) return;
        temperature_->setValue(v / 100.0);
    });
    connect(temperature_, &QDoubleSpinBox::valueChanged, this, [this](double v) {
        const bool was = temperatureSlider_->blockSignals(true);
        temperatureSlider_->setValue(static_cast<int>(std::lround(std::min(v, 2.0) * 100.0)));
        temperatureSlider_->blockSignals(was);
        emitChanged();
    });
    for (QDoubleSpinBox* box : {topP_, minP_, repeatPenalty_, presencePenalty_, frequencyPenalty_})
        connect(box, &QDoubleSpinBox::valueChanged, this, &SamplingPanel::emitChanged);
    for (QSpinBox* box : {topK_, penaltyWindow_, maxTokens_})
        connect(box, &QSpinBox::valueChanged, this, &SamplingPanel::emitChanged);
    connect(fixedSeed_, &QCheckBox::toggled, this, [this](bool on) {
        seed_->setEnabled(on);
        if (on && seed_->text().isEmpty() && seedUsed_) seed_->setText(QString::number(*seedUsed_));
        emitChanged();
    });
    connect(seed_, &QLineEdit::textChanged, this, &SamplingPanel::emitChanged);
    connect(stopStrings_, &QPlainTextEdit::textChanged, this, &SamplingPanel::emitChanged);
    connect(keepSeed_, &QPushButton::clicked, this, [this] {
        if (!seedUsed_) return;
        updating_ = true;
        seed_->setText(QString::number(*seedUsed_));
        fixedSeed_->setChecked(true);
        updating_ = false;
        emitChanged();
    });
    connect(reset, &QPushButton::clicked, this, &SamplingPanel::resetToDefaults);

    setSettings(lantern::SamplingSettings{});
}

lantern::SamplingSettings SamplingPanel::settings() const {
    lantern::SamplingSettings s;
    s.temperature = static_cast<float>(temperature_->value());
    s.top_k = topK_->value();
    s.top_p = static_cast<float>(topP_->value());
    s.min_p = static_cast<float>(minP_->value());
    s.repeat_penalty = static_cast<float>(repeatPenalty_->value());
    s.presence_penalty = static_cast<float>(presencePenalty_->value());
    s.frequency_penalty = static_cast<float>(frequencyPenalty_->value());
    s.penalty_last_n = penaltyWindow_->value();
    s.max_new_tokens = maxTokens_->value();
    if (fixedSeed_->isChecked()) {
        bool ok = false;
        const qulonglong seed = seed_->text().toULongLong(&ok);
        if (ok) s.seed = static_cast<uint64_t>(seed);
    }
    s.stop = parseStopStrings(stopStrings_->toPlainText());
    return s;
}

void SamplingPanel::setSettings(const lantern::SamplingSettings& s) {
    updating_ = true;
    const QList<QWidget*> widgets = {
        temperatureSlider_, temperature_,   topK_,      topP_,      minP_, repeatPenalty_, presencePenalty_,
        frequencyPenalty_,  penaltyWindow_, maxTokens_, fixedSeed_, seed_, stopStrings_};
    for (QWidget* w : widgets) w->blockSignals(true);
    temperature_->setValue(s.temperature);
    temperatureSlider_->setValue(static_cast<int>(std::lround(std::min(s.temperature, 2.0f) * 100.0f)));
    topK_->setValue(s.top_k);
    topP_->setValue(s.top_p);
    minP_->setValue(s.min_p);
    repeatPenalty_->setValue(s.repeat_penalty);
    presencePenalty_->setValue(s.presence_penalty);
    frequencyPenalty_->setValue(s.frequency_penalty);
    penaltyWindow_->setValue(s.penalty_last_n);
    maxTokens_->setValue(s.max_new_tokens);
    fixedSeed_->setChecked(s.seed.has_value());
    seed_->setEnabled(s.seed.has_value());
    seed_->setText(s.seed ? QString::number(*s.seed) : QString());
    stopStrings_->setPlainText(formatStopStrings(s.stop));
    for (QWidget* w : widgets) w->blockSignals(false);
    updating_ = false;
}

void SamplingPanel::emitChanged() {
    if (updating_) return;
    emit settingsChanged(settings());
}

void SamplingPanel::resetToDefaults() {
    setSettings(lantern::SamplingSettings{});
    emit settingsChanged(settings());
}

void SamplingPanel::setSeedUsed(uint64_t seed) {
    seedUsed_ = seed;
    seedUsedLabel_->setText(QString::number(seed));
    keepSeed_->setEnabled(true);
}

void SamplingPanel::showCandidates(const std::vector<lantern::TokenCandidate>& candidates,
                                   int32_t chosenToken) {
    QVector<CandidateBars::Entry> entries;
    entries.reserve(static_cast<qsizetype>(candidates.size()));
    for (const lantern::TokenCandidate& c : candidates)
        entries.push_back({QString::fromStdString(c.piece), c.probability, c.token == chosenToken});
    candidates_->setEntries(entries);
}

std::vector<std::string> SamplingPanel::parseStopStrings(const QString& text) {
    std::vector<std::string> out;
    for (const QString& line : text.split(QLatin1Char('\n'))) {
        QString s;
        for (qsizetype i = 0; i < line.size(); ++i) {
            const QChar c = line.at(i);
            if (c == QLatin1Char('\\') && i + 1 < line.size()) {
                const QChar n = line.at(i + 1);
                if (n == QLatin1Char('n')) {
                    s += QLatin1Char('\n');
                    ++i;
                    continue;
                }
                if (n == QLatin1Char('t')) {
                    s += QLatin1Char('\t');
                    ++i;
                    continue;
                }
                if (n == QLatin1Char('\\')) {
                    s += QLatin1Char('\\');
                    ++i;
                    continue;
                }
            }
            s += c;
        }
        if (!s.isEmpty()) out.push_back(s.toStdString());
    }
    return out;
}

QString SamplingPanel::formatStopStrings(const std::vector<std::string>& stops) {
    QStringList lines;
    for (const std::string& stop : stops) {
        QString s = QString::fromStdString(stop);
        s.replace(QLatin1Char('\\'), QStringLiteral("\\\\"));
        s.replace(QLatin1Char('\n'), QStringLiteral("\\n"));
        s.replace(QLatin1Char('\t'), QStringLiteral("\\t"));
        lines << s;
    }
    return lines.join(QLatin1Char('\n'));
}

void SamplingPanel::setRemote(const QString& server, bool topK, bool minP, bool repeatPenalty,
                              bool penaltyWindow) {
    remote_ = Remote{server, topK, minP, repeatPenalty, penaltyWindow};  // (worded again on LanguageChange)
    QStringList notSent;
    const auto offer = [&](QWidget* box, bool taken, const QString& name) {
        box->setEnabled(taken);
        box->setToolTip(taken ? QString() : tr("%1 does not take this setting: it is not sent.").arg(server));
        if (!taken) notSent << name;
    };
    offer(topK_, topK, tr("top-k"));
    offer(minP_, minP, tr("min-p"));
    offer(repeatPenalty_, repeatPenalty, tr("repeat penalty"));
    offer(penaltyWindow_, penaltyWindow, tr("penalty window"));
    QString note =
        tr("On %1 these settings go with each request: a change applies from the next reply.").arg(server);
    if (!notSent.isEmpty())
        note += QLatin1Char(' ') +
                tr("Not sent (the server does not take them): %1.").arg(notSent.join(QStringLiteral(", ")));
    remoteNote_->setText(note);
    remoteNote_->show();
    candidates_->setEntries({});
    candidates_->hide();
    candidatesNote_->show();
}

void SamplingPanel::setLocal() {
    remote_.reset();
    for (QWidget* box : {static_cast<QWidget*>(topK_), static_cast<QWidget*>(minP_),
                         static_cast<QWidget*>(repeatPenalty_), static_cast<QWidget*>(penaltyWindow_)}) {
        box->setEnabled(true);
        box->setToolTip(QString());
    }
    topK_->setToolTip(tr("Keep only the k most likely tokens (0 = off)."));
    minP_->setToolTip(tr("Drop tokens less likely than this fraction of the best one (0 = off)."));
    repeatPenalty_->setToolTip(tr("Divides the scores of recently used tokens (1 = off)."));
    penaltyWindow_->setToolTip(tr("How many recent tokens the penalties look at."));
    remoteNote_->clear();
    remoteNote_->hide();
    candidates_->show();
    candidatesNote_->hide();
}

QString SamplingPanel::remoteNote() const {
    return remoteNote_->isVisible() || !remoteNote_->isHidden() ? remoteNote_->text() : QString();
}

void SamplingPanel::changeEvent(QEvent* event) {
    QWidget::changeEvent(event);
    if (event->type() == QEvent::LanguageChange) retranslateUi();
}

void SamplingPanel::retranslateUi() {
    texts_.apply();
    if (remote_)
        setRemote(remote_->server, remote_->topK, remote_->minP, remote_->repeatPenalty,
                  remote_->penaltyWindow);
}

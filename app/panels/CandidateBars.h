// CandidateBars — the most likely next tokens at the last position, as labelled horizontal bars.
#pragma once
#include <QString>
#include <QVector>
#include <QWidget>

class CandidateBars : public QWidget {
    Q_OBJECT
public:
    struct Entry {
        QString piece;
        double probability = 0;
        bool chosen = false;
    };
    explicit CandidateBars(QWidget* parent = nullptr);
    void setEntries(const QVector<Entry>& entries);
    const QVector<Entry>& entries() const { return entries_; }
    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

    // How a token piece is shown: spaces visible as "␣", newline as "↵", control chars escaped.
    static QString visiblePiece(const QString& piece);

protected:
    void paintEvent(QPaintEvent* event) override;

private:
    QVector<Entry> entries_;
};

import Foundation

/// The texts of each kind in each language (DESIGN §7). Locales other than "ar" fall back to "en".
///
/// Payload keys read, per kind:
/// - pattern_alert: `metric_type` (or `metric`), `pattern_type` (or `pattern`), `level` (days),
///   `severity`, `baseline_value`, `recent_value`, `deviation_percent` (or `baseline`, `recent`, `deviation`)
/// - daily_forecast: `date`, `risk_level`, `summary` (or `forecast_summary`; `summary_ar` for Arabic)
/// - reminder, system: `title`, `body` (`title_ar`, `body_ar` for Arabic), `deep_link`
enum Templates {
    enum Language: String { case en, ar }

    static func language(_ locale: String) -> Language {
        locale.lowercased().hasPrefix("ar") ? .ar : .en
    }

    // MARK: pattern_alert

    /// Lock-screen text without health detail: the default.
    static func genericAlert(_ l: Language) -> (title: String, body: String) {
        switch l {
        case .en: ("Health update", "There is a new update about someone in your family. Open the app to see it.")
        case .ar: ("تحديث صحي", "هناك تحديث جديد عن أحد أفراد عائلتك. افتح التطبيق للاطلاع عليه.")
        }
    }

    /// "Sleep is down 25% for 7 days" — only when the operator opts in to detail on the lock screen.
    static func detailedAlert(_ l: Language, metric: String, rising: Bool, percent: Int, days: Int)
        -> (title: String, body: String) {
        let name = metricName(metric, l)
        switch l {
        case .en:
            let dayWord = days == 1 ? "day" : "days"
            return ("\(name) alert",
                    "\(name) is \(rising ? "up" : "down") \(percent)% for \(days) \(dayWord). Open the app to see more.")
        case .ar:
            let verb = rising ? "ارتفع" : "انخفض"
            return ("تنبيه: \(name)", "\(verb) \(name) بنسبة \(percent)% خلال \(arabicDays(days)). افتح التطبيق لمعرفة المزيد.")
        }
    }

    static func metricName(_ metric: String, _ l: Language) -> String {
        switch (metric, l) {
        case ("sleep_minutes", .en): "Sleep"
        case ("sleep_minutes", .ar): "النوم"
        case ("steps", .en): "Steps"
        case ("steps", .ar): "عدد الخطوات"
        case ("hrv_ms", .en): "Heart rate variability"
        case ("hrv_ms", .ar): "تقلب معدل ضربات القلب"
        case ("resting_hr", .en): "Resting heart rate"
        case ("resting_hr", .ar): "معدل ضربات القلب أثناء الراحة"
        case (_, .en): metric.replacingOccurrences(of: "_", with: " ").capitalized
        case (_, .ar): metric.replacingOccurrences(of: "_", with: " ")
        }
    }

    /// Arabic counted noun: يوم واحد، يومين، 3–10 أيام، 11+ يومًا.
    static func arabicDays(_ n: Int) -> String {
        switch n {
        case 1: "يوم واحد"
        case 2: "يومين"
        case 3...10: "\(n) أيام"
        default: "\(n) يومًا"
        }
    }

    // MARK: daily_forecast

    static func forecastTitle(_ l: Language) -> String {
        switch l {
        case .en: "Daily Flare Forecast"
        case .ar: "توقعات النوبات اليومية"
        }
    }

    /// Seed 004: "Today's flare risk: HIGH - <summary, first 50 characters>".
    static func forecastBody(_ l: Language, risk: String, summary: String?) -> String {
        let head: String
        switch l {
        case .en: head = "Today's flare risk: \(risk)"
        case .ar: head = "خطر النوبات اليوم: \(arabicRisk(risk))"
        }
        guard let summary, !summary.isEmpty else { return head }
        return "\(head) - \(summary.prefix(50))"
    }

    static func arabicRisk(_ risk: String) -> String {
        switch risk.uppercased() {
        case "LOW": "منخفض"
        case "MODERATE": "متوسط"
        case "HIGH": "مرتفع"
        default: risk
        }
    }

    // MARK: prompt

    /// Seed 002.
    static func prompt(_ l: Language) -> (title: String, body: String) {
        switch l {
        case .en: ("Meditation Check-in", "In the View?")
        case .ar: ("وقفة تأمل", "هل أنت حاضر في اللحظة؟")
        }
    }

    // MARK: reminder, system (used when the payload carries no text)

    static func genericReminder(_ l: Language) -> (title: String, body: String) {
        switch l {
        case .en: ("Reminder", "You have a reminder. Open the app to see it.")
        case .ar: ("تذكير", "لديك تذكير. افتح التطبيق للاطلاع عليه.")
        }
    }

    static func genericSystem(_ l: Language) -> (title: String, body: String) {
        switch l {
        case .en: ("Notification", "You have a new notification. Open the app to see it.")
        case .ar: ("إشعار", "لديك إشعار جديد. افتح التطبيق للاطلاع عليه.")
        }
    }
}

import Foundation

/// The texts of each kind in each language: English, Arabic and Brazilian Portuguese. "ar…" is Arabic,
/// "pt…" Portuguese, anything else English.
///
/// Payload keys read, per kind:
/// - pattern_alert: `metric_type` (or `metric`), `pattern_type` (or `pattern`), `level` (days),
///   `severity`, `baseline_value`, `recent_value`, `deviation_percent` (or `baseline`, `recent`, `deviation`)
/// - daily_forecast: `date`, `risk_level`, `summary` (or `forecast_summary`; `summary_ar` for Arabic,
///   `summary_pt` for Portuguese); without a summary, the stock text for the risk level in the language
/// - reminder, system: `title`, `body` (`title_ar`/`body_ar`, `title_pt`/`body_pt` per language),
///   `deep_link`; without text, a reminder's `reminder_type` (and `washout_event`) picks the stock text
///   for its type; `time` ("HH:MM", the reminder's local time) fills `{time}` in the texts, in the locale's
///   clock (12 h for English, 24 h for Arabic and Portuguese)
enum Templates {
    enum Language: String, CaseIterable { case en, ar, ptBR = "pt-BR" }

    static func language(_ locale: String) -> Language {
        let l = locale.lowercased()
        if l.hasPrefix("ar") { return .ar }
        if l.hasPrefix("pt") { return .ptBR }
        return .en
    }

    // MARK: Time

    /// "8:30 PM" in English (en-US's 12-hour clock), "20:30" in Arabic and Portuguese (24-hour clock).
    /// Western digits throughout: what the app shows elsewhere.
    static func time(_ t: LocalTime, _ l: Language) -> String {
        let mm = t.minute < 10 ? "0\(t.minute)" : "\(t.minute)"
        switch l {
        case .en:
            let h = t.hour % 12 == 0 ? 12 : t.hour % 12
            return "\(h):\(mm) \(t.hour < 12 ? "AM" : "PM")"
        case .ar, .ptBR:
            return (t.hour < 10 ? "0\(t.hour)" : "\(t.hour)") + ":" + mm
        }
    }

    // MARK: pattern_alert

    /// Lock-screen text without health detail: the default.
    static func genericAlert(_ l: Language) -> (title: String, body: String) {
        switch l {
        case .en: ("Health update", "There is a new update about someone in your family. Open the app to see it.")
        case .ar: ("تحديث صحي", "هناك تحديث جديد عن أحد أفراد عائلتك. افتح التطبيق للاطلاع عليه.")
        case .ptBR: ("Atualização de saúde", "Há uma nova atualização sobre alguém da sua família. Abra o app para ver.")
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
        case .ptBR:
            let dayWord = days == 1 ? "dia" : "dias"
            return ("Alerta: \(name)",
                    "\(name): \(rising ? "alta" : "queda") de \(percent)% em \(days) \(dayWord). Abra o app para saber mais.")
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
        case ("sleep_minutes", .ptBR): "Sono"
        case ("steps", .ptBR): "Passos"
        case ("hrv_ms", .ptBR): "Variabilidade da frequência cardíaca"
        case ("resting_hr", .ptBR): "Frequência cardíaca em repouso"
        case (_, .en): metric.replacingOccurrences(of: "_", with: " ").capitalized
        case (_, .ar), (_, .ptBR): metric.replacingOccurrences(of: "_", with: " ")
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
        case .ptBR: "Previsão diária de crises"
        }
    }

    /// "Today's flare risk: HIGH - <summary, first 50 characters>". A summary of our own (`cut: false`,
    /// the stock texts of `forecastSummary`) is kept whole.
    static func forecastBody(_ l: Language, risk: String, summary: String?, cut: Bool = true) -> String {
        let head: String
        switch l {
        case .en: head = "Today's flare risk: \(risk)"
        case .ar: head = "خطر النوبات اليوم: \(arabicRisk(risk))"
        case .ptBR: head = "Risco de crise hoje: \(portugueseRisk(risk))"
        }
        guard let summary, !summary.isEmpty else { return head }
        return "\(head) - \(cut ? String(summary.prefix(50)) : summary)"
    }

    /// The stock summary per risk level, in each language: the summary of a forecast made from the
    /// weather (which has no `forecast_summary` of its own). Nil for an unknown level.
    static func forecastSummary(_ l: Language, risk: String) -> String? {
        switch (risk.uppercased(), l) {
        case ("LOW", .en): "Steady pressure expected. Your body may feel more balanced today."
        case ("MODERATE", .en): "Pressure changes ahead. Chinese medicine recommends gentle movement."
        case ("HIGH", .en): "Significant pressure drop expected. Take extra care today."
        case ("LOW", .ar): "يُتوقع ضغط جوي مستقر. قد يشعر جسمك بتوازن أكبر اليوم."
        case ("MODERATE", .ar): "تغيّرات في الضغط الجوي قادمة. يوصي الطب الصيني بالحركة اللطيفة."
        case ("HIGH", .ar): "يُتوقع انخفاض كبير في الضغط الجوي. اعتنِ بنفسك جيدًا اليوم."
        case ("LOW", .ptBR): "Pressão estável prevista. Seu corpo pode se sentir mais equilibrado hoje."
        case ("MODERATE", .ptBR): "Mudanças de pressão à vista. A medicina chinesa recomenda movimentos leves."
        case ("HIGH", .ptBR): "Queda significativa de pressão prevista. Cuide-se bem hoje."
        default: nil
        }
    }

    static func portugueseRisk(_ risk: String) -> String {
        switch risk.uppercased() {
        case "LOW": "BAIXO"
        case "MODERATE": "MODERADO"
        case "HIGH": "ALTO"
        default: risk
        }
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

    /// The meditation prompt: the same words every time.
    static func prompt(_ l: Language) -> (title: String, body: String) {
        switch l {
        case .en: ("Meditation Check-in", "In the View?")
        case .ar: ("وقفة تأمل", "هل أنت حاضر في اللحظة؟")
        case .ptBR: ("Pausa para meditação", "Você está presente?")
        }
    }

    // MARK: reminder, system (used when the payload carries no text)

    /// A reminder at a known local time, when the payload carries no text.
    static func timedReminder(_ l: Language, at t: LocalTime) -> (title: String, body: String) {
        let when = time(t, l)
        switch l {
        case .en: return ("Reminder", "You have a reminder at \(when). Open the app to see it.")
        case .ar: return ("تذكير", "لديك تذكير في الساعة \(when). افتح التطبيق للاطلاع عليه.")
        case .ptBR: return ("Lembrete", "Você tem um lembrete às \(when). Abra o app para ver.")
        }
    }

    /// The text of each reminder type, when the payload carries no text: the reminders phase writes
    /// `reminder_type` (and `washout_event`, start or end) into every row it makes.
    static func typedReminder(_ l: Language, type: ReminderType, washoutEnds: Bool) -> (title: String, body: String) {
        switch (type, l) {
        case (.daily, .en): ("Daily check-in", "Time to log how you are feeling today.")
        case (.daily, .ar): ("التسجيل اليومي", "حان وقت تسجيل شعورك اليوم.")
        case (.daily, .ptBR): ("Registro diário", "Hora de registrar como você está hoje.")
        case (.dose, .en): ("Dose reminder", "Your next dose is coming up. Mark it as taken in the app.")
        case (.dose, .ar): ("تذكير بالجرعة", "موعد جرعتك التالية يقترب. سجّلها في التطبيق عند تناولها.")
        case (.dose, .ptBR): ("Lembrete de dose", "Sua próxima dose está chegando. Marque como tomada no app.")
        case (.washout, .en) where washoutEnds: ("Washout period complete", "Your washout period is over. Open the app for the next step.")
        case (.washout, .ar) where washoutEnds: ("انتهت فترة التوقف", "انتهت فترة التوقف. افتح التطبيق لمعرفة الخطوة التالية.")
        case (.washout, .ptBR) where washoutEnds: ("Fim do período de washout", "Seu período de washout terminou. Abra o app para o próximo passo.")
        case (.washout, .en): ("Washout period begins", "Your washout period starts now. Follow the plan in the app.")
        case (.washout, .ar): ("بدء فترة التوقف", "تبدأ فترة التوقف الآن. اتبع الخطة في التطبيق.")
        case (.washout, .ptBR): ("Início do período de washout", "Seu período de washout começa agora. Siga o plano no app.")
        case (.testStart, .en): ("Your test is starting", "A new test step begins. Open the app to get started.")
        case (.testStart, .ar): ("اختبارك يبدأ", "تبدأ خطوة اختبار جديدة. افتح التطبيق للبدء.")
        case (.testStart, .ptBR): ("Seu teste está começando", "Uma nova etapa do teste começa. Abra o app para começar.")
        }
    }

    static func genericReminder(_ l: Language) -> (title: String, body: String) {
        switch l {
        case .en: ("Reminder", "You have a reminder. Open the app to see it.")
        case .ar: ("تذكير", "لديك تذكير. افتح التطبيق للاطلاع عليه.")
        case .ptBR: ("Lembrete", "Você tem um lembrete. Abra o app para ver.")
        }
    }

    static func genericSystem(_ l: Language) -> (title: String, body: String) {
        switch l {
        case .en: ("Notification", "You have a new notification. Open the app to see it.")
        case .ar: ("إشعار", "لديك إشعار جديد. افتح التطبيق للاطلاع عليه.")
        case .ptBR: ("Notificação", "Você tem uma nova notificação. Abra o app para ver.")
        }
    }
}

import HeraldChannels
import HeraldCore

extension ProviderRegistration {
    /// WHATSAPP_TOKEN WHATSAPP_PHONE_NUMBER_ID [WHATSAPP_TEMPLATE_<KIND>=name:lang] [WHATSAPP_URL]
    static let whatsapp = ProviderRegistration(
        provider: .whatsapp, keys: ["WHATSAPP_TOKEN", "WHATSAPP_PHONE_NUMBER_ID", "WHATSAPP_TEMPLATE_", "WHATSAPP_URL"]
    ) { settings in
        guard let v = try required(settings, ["WHATSAPP_TOKEN", "WHATSAPP_PHONE_NUMBER_ID"], for: "WhatsApp"),
              let token = v["WHATSAPP_TOKEN"], let number = v["WHATSAPP_PHONE_NUMBER_ID"] else { return nil }
        let templates = try WhatsAppAdapter.parseTemplates(settings.withPrefix("WHATSAPP_TEMPLATE_"))
        return try WhatsAppAdapter(token: token, phoneNumberId: number, templates: templates,
                                           baseURL: settings["WHATSAPP_URL"])
    }
}

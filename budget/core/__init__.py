"""core: what every layer may use: errors, messages (i18n), the on-disk cache, dates, text.
Imports nothing of trainbudget's but itself."""

"""Dashboard pages, one module per area; each exports ``urlpatterns``."""

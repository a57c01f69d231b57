import jakarta.enterprise.context.ApplicationScoped;

@ApplicationScoped
public class CatalogService {
}

import javax.ejb.Stateless;

@Stateless
public class CatalogService {
}

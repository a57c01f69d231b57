package com.acme.billing;

import java.math.BigDecimal;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;

@ApplicationScoped
public class InvoiceService {

    @Inject
    TaxTable taxes;

    public BigDecimal gross(BigDecimal net, String country) {
        return net.add(net.multiply(taxes.rate(country)));
    }
}

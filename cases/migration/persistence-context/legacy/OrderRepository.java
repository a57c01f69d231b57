package com.acme.orders;

import java.util.List;

import javax.enterprise.context.ApplicationScoped;
import javax.persistence.EntityManager;
import javax.persistence.PersistenceContext;

@ApplicationScoped
public class OrderRepository {

    @PersistenceContext
    EntityManager em;

    public List<Order> findOpenByCustomer(String customer) {
        return em.createQuery("select o from Order o where o.customer = :c", Order.class)
                .setParameter("c", customer)
                .getResultList();
    }
}
